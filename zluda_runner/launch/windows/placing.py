"""Placing ZLUDA's DLLs into the target's ``torch/lib``, journaled and undoable.

Plain file work (tested on Linux with PE fixtures, and under Wine).

Protocol (each step survives a crash at any point):

1. the journal is written (``in-progress``, fsync'd) *before* any change: per
   file its original SHA-256 and size (or absent), where the original is saved,
   and what will be placed (the shim's SHA-256);
2. per file: the original is copied into ``originals/`` (temp name + rename),
   then the new content is copied to a temp name in ``torch/lib`` and
   ``os.replace``'d over the file;
3. the journal is rewritten as ``placed`` with each file's (size, mtime, inode)
   so later drift checks need not hash hundreds of MB.

An earlier placement found by the next run is handled by the same rules ``status`` reports
(:func:`~zluda_runner.launch.windows.restoring.advise`): intact, it is kept; drifted, quarantined
or interrupted, what is ours is first put back from the saved originals (a file pip replaced
meanwhile becomes the new original), then everything is placed again, with a warning.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.errors import PlacementError
from zluda_runner.core.replace import InUseCheck, refuse_if_in_use, refuse_if_unwritable
from zluda_runner.core.serial import JsonMixin
from zluda_runner.launch.windows.journal import (
    BY_OTHER,
    IN_PROGRESS,
    JOURNAL_FILE,
    JOURNAL_SCHEMA,
    ORIGINALS_DIR,
    PLACED,
    RESTORING,
    ST_CHANGED,
    ST_PLACED,
    FileState,
    Journal,
    JournalEntry,
    Placement,
    check_name,
    classify,
    copy_into,
    file_state,
    forget,
    is_before,
    journal_dir_for,
    lock,
    read_journal,
    remove_stale_temps,
    sources_changed,
    stat_key,
    write_journal,
)
from zluda_runner.launch.windows.restoring import (
    NEXT_NOTHING,
    RestoreResult,
    advise,
    drift_text,
    put_back,
    status_of,
    to_put_back,
)

AfterEach = Callable[[str], None]


@dataclass
class PlacementResult(JsonMixin):
    torch_lib: Path
    journal: Path
    placed: list[str] = field(default_factory=list)  # files written by this call
    already_placed: bool = False  # nothing to do: the placement was intact
    restored_first: list[str] = field(default_factory=list)  # an older placement undone before re-placing
    warnings: list[str] = field(default_factory=list)  # what was found and re-placed (quarantine, drift)


def _validate(torch_lib: Path, placements: Sequence[Placement]) -> None:
    if not torch_lib.is_dir():
        raise PlacementError(f"{torch_lib} is not a folder", hint="give the target's torch/lib folder")
    if not placements:
        raise PlacementError("nothing to place", hint="this is a planner bug: no placements")
    names: list[str] = []
    for p in placements:
        check_name(p.dest_name, "destination name")
        names.append(p.dest_name.lower())
        if p.backup_name is not None:
            check_name(p.backup_name, "backup name")
            names.append(p.backup_name.lower())
        if not Path(p.source).is_file():
            raise PlacementError(
                f"release file {p.source} is missing", hint="fetch the release again or check {opt:zluda_dir}"
            )
    if len(set(names)) != len(names):  # Windows names are case-insensitive
        raise PlacementError("two placements write the same file name", hint="this is a planner bug")


def _entries_for(torch_lib: Path, placements: Sequence[Placement]) -> list[JournalEntry]:
    entries = []
    for p in placements:
        source = Path(os.path.abspath(p.source))
        shim = file_state(source)
        assert shim is not None  # checked by _validate
        st = os.stat(source)
        original = file_state(torch_lib / p.dest_name)
        entries.append(
            JournalEntry(
                name=p.dest_name, kind="shim", source=str(source), original=original, placed=shim,
                saved=f"{ORIGINALS_DIR}/{p.dest_name}" if original else None,
                source_stat=[st.st_size, st.st_mtime_ns],
            )
        )
        if p.backup_name is not None:
            if original is None:
                raise PlacementError(
                    f"{p.dest_name} is not in {torch_lib}: there is nothing to keep as {p.backup_name}",
                    hint="this release needs torch's own copy of it: reinstall torch, then retry",
                )
            before = file_state(torch_lib / p.backup_name)
            entries.append(
                JournalEntry(
                    name=p.backup_name, kind="backup", source=p.dest_name, original=before, placed=original,
                    saved=f"{ORIGINALS_DIR}/{p.backup_name}" if before else None,
                )
            )
    return entries


def _save_original(dest: Path, saved: Path, original: FileState) -> None:
    if file_state(saved) == original:
        return
    copy_into(dest, saved)
    if file_state(saved) != original:
        raise PlacementError(
            f"{dest} changed while it was being saved", hint="retry when nothing else is writing to torch/lib"
        )


def _sources(jdir: Path, journal: Journal, placements: Sequence[Placement]) -> dict[str, Path]:
    """Entry name -> the file its content comes from: the caller's release file for a shim (never a
    path read from the journal), the saved original of its owner for a backup."""
    by_dest = {p.dest_name.lower(): Path(os.path.abspath(p.source)) for p in placements}
    out: dict[str, Path] = {}
    for entry in journal.entries:
        if entry.kind == "shim":
            source = by_dest.get(entry.name.lower())
            if source is None:
                raise PlacementError(f"the placement journal has {entry.name}, which this run does not place",
                                     hint="run {cmd:restore}, then run again")
            out[entry.name] = source
        else:
            owner = next(e for e in journal.entries if e.name == entry.source and e.kind == "shim")
            out[entry.name] = jdir / (owner.saved or f"{ORIGINALS_DIR}/{owner.name}")
    return out


def _apply(torch_lib: Path, jdir: Path, entry: JournalEntry, source: Path, check: InUseCheck | None) -> bool:
    """Bring one file to its placed content. True when something was written."""
    dest = torch_lib / entry.name
    current = file_state(dest)
    state = classify(entry, current)
    if state == ST_PLACED:
        return False
    if not is_before(entry, state):
        raise PlacementError(
            f"{dest} changed while being placed (neither the original nor the shim)",
            hint="run {cmd:restore} to put back what can be, then reinstall torch if needed",
        )
    if entry.original is not None and entry.saved is not None:
        _save_original(dest, jdir / entry.saved, entry.original)
    if file_state(source) != entry.placed:
        raise PlacementError(
            f"{source} is not the file recorded in the journal",
            hint="the release or the saved original changed: run {cmd:restore}, then run again",
        )
    copy_into(source, dest, _doing(torch_lib), check=check)
    return True


def _apply_all(
    torch_lib: Path,
    jdir: Path,
    journal: Journal,
    placements: Sequence[Placement],
    after_each: AfterEach | None,
    check: InUseCheck | None,
) -> tuple[list[str], Path]:
    sources = _sources(jdir, journal, placements)
    written = []
    for entry in journal.entries:
        if _apply(torch_lib, jdir, entry, sources[entry.name], check):
            written.append(entry.name)
        if after_each is not None:
            after_each(entry.name)
    for entry in journal.entries:
        entry.placed_stat = stat_key(torch_lib / entry.name)
    journal.state = PLACED
    return written, write_journal(jdir, journal)


def place(
    torch_lib: Path,
    placements: Sequence[Placement],
    journal_dir: Path | None = None,
    *,
    after_each: AfterEach | None = None,
    check: InUseCheck | None = None,
    also_writes: Sequence[Path] = (),
) -> PlacementResult:
    """Place ``placements`` into ``torch_lib``, journaled (see the module doc).

    An intact earlier placement of the same files is left as is (``already_placed``); a
    drifted, quarantined, interrupted or different one is first put back, then placed again
    (``warnings`` says what was found). ``after_each(name)`` is called after each file (tests
    use it to simulate a crash). A file to write that a running program holds (Windows: torch's
    DLL loaded by a running python) refuses the whole placement before anything changes, a
    :class:`~zluda_runner.core.errors.FileInUseError` naming it (``check``: see
    :func:`zluda_runner.core.replace.platform_check`); so does a ``torch_lib`` this user may not write
    (a Python under Program Files), a :class:`~zluda_runner.core.errors.NotWritableError`, as does one of
    ``also_writes`` (the folders the caller writes next: the start-up hooks' site-packages).
    """
    torch_lib = Path(torch_lib)
    _validate(torch_lib, placements)
    jdir = journal_dir_for(torch_lib, journal_dir)
    refuse_if_unwritable([torch_lib, jdir.parent, *also_writes], _doing(torch_lib))  # before the lock is made
    return _place_locked(torch_lib, placements, jdir, journal_dir, after_each, check)


def _doing(torch_lib: Path) -> str:
    return f"place ZLUDA's DLLs into {torch_lib}"


def _touched(torch_lib: Path, placements: Sequence[Placement], journal: Journal | None) -> list[Path]:
    """Every file of ``torch_lib`` a placement may write or delete (this one's and an earlier one's)."""
    names = {p.dest_name for p in placements} | {p.backup_name for p in placements if p.backup_name}
    names |= {e.name for e in journal.entries} if journal is not None else set()
    return [torch_lib / n for n in sorted(names)]


def _undo_earlier(
    torch_lib: Path, jdir: Path, journal: Journal, placements: Sequence[Placement], check: InUseCheck | None
) -> tuple[RestoreResult, list[str]]:
    """Put back what an earlier placement left of ours; the warnings describing what was found."""
    found = status_of(torch_lib, jdir, journal, deep=True)
    advise(found, jdir, journal)
    warnings = []
    if journal.state == IN_PROGRESS:
        warnings.append("an earlier placement was interrupted: it was undone and placed again")
    if journal.state == RESTORING:
        warnings.append("an earlier restore stopped half-way: it was finished and placed again")
    warnings.extend(f"{drift_text(f.name, f.state)}: placed again" for f in found.files if f.by == BY_OTHER)
    if found.quarantined:
        warnings.append("add torch/lib and the ZLUDA folder to your antivirus exclusions, or it will happen "
                        "again")
    ours = {}
    for p in placements:
        state = file_state(Path(p.source))
        if state is not None:
            ours[p.dest_name.lower()] = state.sha256
    result = RestoreResult(torch_lib)
    put_back(torch_lib, jdir, journal, to_put_back(torch_lib, journal, ours), result, check)
    for entry in journal.entries:
        if classify(entry, file_state(torch_lib / entry.name)) == ST_CHANGED:
            result.kept.append(entry.name)  # the user's new original: adopted
    remove_stale_temps(torch_lib, [e.name for e in journal.entries])
    return result, warnings


def _place_locked(
    torch_lib: Path,
    placements: Sequence[Placement],
    jdir: Path,
    journal_dir: Path | None,
    after_each: AfterEach | None,
    check: InUseCheck | None,
) -> PlacementResult:
    with lock(jdir) as held:
        try:
            return _place_held(torch_lib, placements, jdir, journal_dir, after_each, check)
        finally:  # refused before any change: leave no trace (the lock file and folder go too)
            held.drop = not (jdir / JOURNAL_FILE).exists() and not (jdir / ORIGINALS_DIR).exists()


def _place_held(
    torch_lib: Path,
    placements: Sequence[Placement],
    jdir: Path,
    journal_dir: Path | None,
    after_each: AfterEach | None,
    check: InUseCheck | None,
) -> PlacementResult:
    journal = read_journal(torch_lib, journal_dir)
    restored_first: list[str] = []
    warnings: list[str] = []
    if journal is not None and journal.state == PLACED:
        current = status_of(torch_lib, jdir, journal, deep=False)
        advise(current, jdir, journal)
        if current.next_run == NEXT_NOTHING and not sources_changed(journal, placements):
            return PlacementResult(torch_lib, jdir / JOURNAL_FILE, already_placed=True)
    refuse_if_in_use(_touched(torch_lib, placements, journal), _doing(torch_lib), check)  # all or none
    if journal is not None:
        outcome, warnings = _undo_earlier(torch_lib, jdir, journal, placements, check)
        restored_first = [*outcome.restored, *outcome.removed]
        forget(jdir)
    entries = _entries_for(torch_lib, placements)
    journal = Journal(JOURNAL_SCHEMA, IN_PROGRESS, str(torch_lib), entries)
    write_journal(jdir, journal)  # before any change
    written, path = _apply_all(torch_lib, jdir, journal, placements, after_each, check)
    return PlacementResult(torch_lib, path, written, False, restored_first, warnings)
