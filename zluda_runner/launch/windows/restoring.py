"""Undoing a DLL placement exactly, and telling what became of it (pip drift, antivirus quarantine).

Each placed file is in one of five states, read from the file itself
(:func:`~zluda_runner.launch.windows.journal.classify`):

* ``placed``: the content we put there;
* ``original``: what was there before (pip reinstalled the same torch);
* ``changed``: something else (pip upgraded torch, or a hand copy);
* ``missing`` / ``empty``: gone or truncated to 0 bytes: what antivirus quarantine does to a DLL.

Whose a file is, the journal decides (:func:`~zluda_runner.launch.windows.journal.is_ours`):
``restore`` puts the original back over ``placed``, ``missing`` and ``empty`` files (nothing of
anyone's is lost by that) and keeps a ``changed`` file as it is: another program wrote it (pip's
new torch DLL), and its pre-placement original is dropped with the journal: a file zluda-run did not
place is never replaced (``restore --force``, which once did, is deprecated: it changes nothing).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zluda_runner.core.errors import FileInUseError, PlacementError
from zluda_runner.core.replace import InUseCheck, refuse_if_in_use, remove_file
from zluda_runner.core.serial import JsonMixin
from zluda_runner.launch.windows.journal import (
    BY_OTHER,
    BY_PLACING,
    BY_RESTORING,
    IN_PROGRESS,
    JOURNAL_FILE,
    ORIGINALS_DIR,
    PLACED,
    RESTORING,
    ST_CHANGED,
    ST_EMPTY,
    ST_MISSING,
    ST_ORIGINAL,
    ST_PLACED,
    Journal,
    JournalEntry,
    Placement,
    classify,
    file_state,
    forget,
    is_before,
    is_ours,
    journal_dir_for,
    lock,
    made_by,
    mark_restoring,
    move_into,
    read_journal,
    remove_stale_temps,
    saved_path,
    sources_changed,
    stat_key,
    sweep_stale_lock,
)

# What the next run does about an existing journal.
NEXT_NOTHING, NEXT_REPLACE, NEXT_REFUSE = "nothing", "re-place", "refuse"


class NothingToRestoreError(PlacementError):
    """No placement journal in torch/lib: never placed there, or already restored (by a concurrent call)."""


@dataclass
class RestoreResult(JsonMixin):
    torch_lib: Path
    restored: list[str] = field(default_factory=list)  # original put back
    removed: list[str] = field(default_factory=list)  # placed where nothing was: deleted
    unchanged: list[str] = field(default_factory=list)  # already the original
    kept: list[str] = field(default_factory=list)  # written by another program since placement (pip): kept
    temp_files_removed: list[str] = field(default_factory=list)  # left by a killed placement

    @property
    def complete(self) -> bool:
        """Deprecated, always True: a restore that returns left nothing of zluda-run's placed (one that
        cannot raises). Reading it warns; ``to_dict`` keeps the key for the JSON of schema 1."""
        warnings.warn("RestoreResult.complete is always True (a restore that cannot finish raises) and goes "
                      "in the next major version", DeprecationWarning, stacklevel=2)
        return True

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "complete": True}  # schema 1's key, deprecated (see ``complete``)



@dataclass
class FileStatus(JsonMixin):
    name: str
    kind: str
    state: str  # placed | original | changed | missing | empty
    placed_sha256: str
    actual_sha256: str | None
    by: str | None = None  # who made it so (journal.BY_*): placing / restoring (zluda-run, stopped) | other


@dataclass
class PlacementStatus(JsonMixin):
    torch_lib: Path
    journal: Path | None
    state: str  # "none" | "in-progress" | "placed" | "restoring"
    files: list[FileStatus] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)  # one line per file that is not as placed
    quarantined: list[str] = field(default_factory=list)  # missing or emptied, not by zluda-run (antivirus?)
    needs_replace: bool = False
    next_run: str = NEXT_NOTHING  # nothing | re-place | refuse
    advice: str = ""
    hooks: list[Path] = field(default_factory=list)  # zluda-run's .pth hooks in torch's site-packages


_DRIFT_TEXT = {
    ST_MISSING: "{} is missing: quarantined or deleted (antivirus?)",
    ST_EMPTY: "{} is empty (0 bytes): quarantined by antivirus?",
    ST_ORIGINAL: "{} has its original content again (torch reinstalled?)",
    ST_CHANGED: "{} was replaced by another file (torch upgraded, or by hand)",
}
_MADE_TEXT = {
    BY_PLACING: "{} is not placed yet: the placement stopped before it",
    BY_RESTORING: "{} was already put back by a restore that stopped half-way",
}


def drift_text(name: str, state: str, by: str | None = BY_OTHER) -> str:
    """What happened to one file, as the journal tells it: zluda-run's own stopped work, or another's."""
    return _MADE_TEXT.get(by or BY_OTHER, _DRIFT_TEXT[state]).format(name)


def _saved_ok(jdir: Path, entry: JournalEntry) -> bool:
    """Is ``entry``'s saved original there, intact? (Trivially so when there was no original.)"""
    if entry.original is None:
        return True
    path = saved_path(jdir, entry)
    return path is not None and file_state(path) == entry.original


def damaged_originals(jdir: Path, entries: list[JournalEntry]) -> list[str]:
    return [e.name for e in entries if not _saved_ok(jdir, e)]


def originals_error(jdir: Path, names: list[str]) -> PlacementError:
    return PlacementError(
        f"the saved originals of {', '.join(names)} are missing or damaged in {jdir / ORIGINALS_DIR}; "
        "nothing was changed",
        hint="reinstall torch to get its own DLLs back (pip install --force-reinstall --no-deps "
        f"torch==<your version>), then delete {jdir}",
    )


def put_back(torch_lib: Path, jdir: Path, journal: Journal, entries: list[JournalEntry],
             result: RestoreResult, check: InUseCheck | None = None) -> None:
    """Put each entry's original back (or delete what we added), last placed first.

    Every saved original is checked, and every file to change is checked not to be held by a running
    program (Windows: a loaded DLL), before anything is changed: all of it is put back, or none. The
    journal says ``restoring`` before the first change: stopped half-way, what it put back is known
    to be zluda-run's doing (:func:`~zluda_runner.launch.windows.journal.made_by`)."""
    damaged = damaged_originals(jdir, entries)
    if damaged:
        raise originals_error(jdir, damaged)
    doing = f"restore {torch_lib}"
    refuse_if_in_use([torch_lib / e.name for e in entries], doing, check)
    if entries and journal.state != RESTORING:
        mark_restoring(jdir, journal)
    for entry in reversed(entries):
        dest = torch_lib / entry.name
        saved = saved_path(jdir, entry)
        try:
            if entry.original is None or saved is None:
                remove_file(dest, doing, check=check)
                result.removed.append(entry.name)
            else:
                move_into(saved, dest, doing, check=check)
                result.restored.append(entry.name)
        except FileInUseError as exc:  # loaded after the check: say what is done and what finishes it
            done = len(result.restored) + len(result.removed)
            if done:
                exc.message = exc.raw_message + (
                    f" {done} of {len(entries)} files were already put back; the journal and the "
                    "saved originals are kept, so {cmd:restore} finishes once it is free.")
            raise
        except OSError as exc:  # a read-only torch/lib, a full disk: said, and where the originals are
            done = len(result.restored) + len(result.removed)
            raise fault(exc, torch_lib, jdir, done, len(entries)) from None


def fault(exc: OSError, torch_lib: Path, jdir: Path, done: int = 0, total: int = 0) -> PlacementError:
    """What stopped a restore (a read-only torch/lib, a full disk, a file-size limit), and where the
    originals are: nothing of them is lost, {cmd:restore} finishes once the cause is gone."""
    where = f" ({exc.filename})" if exc.filename else ""
    so_far = f"; {done} of {total} files were already put back" if done else ""
    return PlacementError(
        f"cannot restore {torch_lib}: {exc.strerror or exc}{where}{so_far}. The saved originals are kept in "
        f"{jdir / ORIGINALS_DIR} (the journal: {jdir / JOURNAL_FILE})",
        hint="make torch/lib writable (run as its owner; not a read-only mount) or free space, then run "
        "{cmd:restore} again; or copy the originals back into torch/lib by hand",
    )


def restore_entries(torch_lib: Path, jdir: Path, journal: Journal,
                    check: InUseCheck | None = None) -> RestoreResult:
    result = RestoreResult(torch_lib)
    todo: list[JournalEntry] = []
    for entry in journal.entries:
        state = classify(entry, file_state(torch_lib / entry.name))
        if is_ours(entry, state, torch_lib):
            todo.append(entry)
        elif is_before(entry, state):
            result.unchanged.append(entry.name)
        else:
            result.kept.append(entry.name)
    put_back(torch_lib, jdir, journal, todo, result, check)
    return result


def restore(torch_lib: Path, journal_dir: Path | None = None, *,
            check: InUseCheck | None = None) -> RestoreResult:
    """Put back exactly what was in ``torch_lib`` before placement, of what is still zluda-run's.

    A file held by a running program (Windows: the app still has the DLL loaded) refuses the whole
    restore with a :class:`~zluda_runner.core.errors.FileInUseError` naming it, nothing changed
    (``check`` replaces the platform's test, :func:`zluda_runner.core.replace.platform_check`).

    A file another program wrote since placement (pip upgraded torch, a hand copy) is that program's:
    it is kept as it is and listed in ``kept`` (its pre-placement original is obsolete and dropped).
    Then nothing of zluda-run's is left: the journal is dropped, and temp files a killed placement
    left in ``torch_lib`` are removed.
    """
    torch_lib = Path(torch_lib)
    jdir = journal_dir_for(torch_lib, journal_dir)
    if read_journal(torch_lib, journal_dir) is None:
        swept = sweep_stale_lock(jdir)  # a placement killed before its journal left only its lock
        raise NothingToRestoreError(
            f"nothing to restore in {torch_lib}: no placement journal at {jdir / JOURNAL_FILE}"
            + (f" (the empty {jdir} a killed placement left was removed)" if swept else ""),
            hint="zluda-runner never placed DLLs here (or already restored them)",
        )
    try:
        with lock(jdir) as held:
            journal = read_journal(torch_lib, journal_dir)
            if journal is None:  # restored meanwhile by a concurrent call
                held.drop = not (jdir / ORIGINALS_DIR).exists()
                raise NothingToRestoreError(f"nothing to restore in {torch_lib}",
                                            hint="it was restored meanwhile")
            result = restore_entries(torch_lib, jdir, journal, check=check)
            result.temp_files_removed = remove_stale_temps(torch_lib, [e.name for e in journal.entries])
            forget(jdir)
            held.drop = True  # no trace left: the lock file and the folder go as the lock is released
    except OSError as exc:  # its lock could not be taken (a read-only journal folder)
        raise fault(exc, torch_lib, jdir) from None
    return result


# ---------------------------------------------------------------- status / drift


def status_of(torch_lib: Path, jdir: Path, journal: Journal, *, deep: bool) -> PlacementStatus:
    status = PlacementStatus(torch_lib, jdir / JOURNAL_FILE, journal.state)
    for entry in journal.entries:
        path = torch_lib / entry.name
        if not deep and entry.placed_stat is not None and stat_key(path) == entry.placed_stat:
            status.files.append(FileStatus(entry.name, entry.kind, ST_PLACED, entry.placed.sha256,
                                           entry.placed.sha256))
            continue
        current = file_state(path)
        state = classify(entry, current)
        by = made_by(journal.state, entry, state)
        if state != ST_PLACED:
            status.drift.append(drift_text(entry.name, state, by))
        if state in (ST_MISSING, ST_EMPTY) and by == BY_OTHER:
            status.quarantined.append(entry.name)
        status.files.append(FileStatus(entry.name, entry.kind, state, entry.placed.sha256,
                                       current.sha256 if current else None, by))
    return status


def to_put_back(torch_lib: Path, journal: Journal, ours: dict[str, str]) -> list[JournalEntry]:
    """Before placing again: the entries whose file must first get its original back.

    ``placed``, ``missing`` and ``empty`` files are ours (or nothing); a ``changed`` file whose
    content is what this run would place (``ours``: name -> SHA-256) is ours too. Any other
    ``changed`` file is the user's new original (pip upgraded torch) and is adopted as such."""
    todo = []
    for entry in journal.entries:
        current = file_state(torch_lib / entry.name)
        state = classify(entry, current)
        if is_ours(entry, state) or (
            state == ST_CHANGED and current is not None and ours.get(entry.name.lower()) == current.sha256
        ):
            todo.append(entry)
    return todo


def advise(status: PlacementStatus, jdir: Path, journal: Journal) -> None:
    """What the next run will do about this journal, in ``next_run`` and ``advice``: the same rules
    :func:`zluda_runner.launch.windows.placing.place` follows, so the advice holds."""
    if journal.state == PLACED and not status.drift:
        status.next_run, status.advice = NEXT_NOTHING, "intact: nothing to do"
        return
    damaged = damaged_originals(jdir, to_put_back(status.torch_lib, journal, {}))
    if damaged:
        status.next_run = NEXT_REFUSE
        status.advice = (
            f"the next run refuses: the saved originals of {', '.join(damaged)} are missing or damaged; "
            "reinstall torch (pip install --force-reinstall --no-deps torch==<your version>), then delete "
            f"{jdir}"
        )
        return
    status.next_run = NEXT_REPLACE
    if journal.state == IN_PROGRESS:
        status.advice = ("an earlier placement was interrupted: the next `zluda-run` undoes it and places "
                         "again; `zluda-run restore` puts the originals back instead")
    elif journal.state == RESTORING:
        status.advice = ("an earlier `zluda-run restore` stopped half-way: `zluda-run restore` finishes it; "
                         "the next `zluda-run` places again instead")
    elif status.quarantined:
        status.advice = (
            f"{', '.join(status.quarantined)} quarantined or deleted: the next `zluda-run` re-places them "
            "(add torch/lib and the ZLUDA folder to your antivirus exclusions first); `zluda-run restore` "
            "puts NVIDIA's originals back"
        )
    else:
        status.advice = "drift: the next `zluda-run` re-places the changed files; `zluda-run restore` undoes"


def status(
    torch_lib: Path,
    journal_dir: Path | None = None,
    placements: Sequence[Placement] | None = None,
    *,
    deep: bool = False,
) -> PlacementStatus:
    """Is the placement intact? Drift (pip reinstalled torch, antivirus) sets ``needs_replace``.

    With ``placements`` (what a run wants now), a different request also needs re-placing.
    ``deep`` hashes every file instead of trusting (size, mtime, inode).
    """
    torch_lib = Path(torch_lib)
    jdir = journal_dir_for(torch_lib, journal_dir)
    journal = read_journal(torch_lib, journal_dir)
    if journal is None:
        return PlacementStatus(torch_lib, None, "none", needs_replace=bool(placements),
                               next_run=NEXT_REPLACE if placements else NEXT_NOTHING,
                               advice="nothing placed here")
    result = status_of(torch_lib, jdir, journal, deep=deep)
    advise(result, jdir, journal)
    changed_request = placements is not None and sources_changed(journal, placements)
    result.needs_replace = journal.state != PLACED or bool(result.drift) or changed_request
    if changed_request and result.next_run == NEXT_NOTHING:
        result.next_run, result.advice = NEXT_REPLACE, "the release changed: the next run places it instead"
    return result
