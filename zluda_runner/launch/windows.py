"""Windows launch: DLL placement into the target's ``torch/lib``, journaled and undoable.

Plain file work (tested on Linux with PE fixtures); only the final process start
is OS-specific.

Where the journal lives: ``<torch/lib>/.zluda-runner/`` (``journal.json`` plus
``originals/``). Next to the files it describes because (1) saving and putting
back an original is a copy on the same volume, so it cannot fail half-way
for lack of a cross-volume move and ``os.replace`` stays atomic; (2) the
originals must outlive the cache: a user who clears the cache must still be
able to ``zluda-run restore``; (3) writing into ``torch/lib`` is what the user
asked for by requesting placement, so no new location is touched. A caller
may pass another ``journal_dir`` (e.g. under the cache); every function takes it.

Protocol (each step survives a crash at any point):

1. the journal is written (``in-progress``, fsync'd) *before* any change: per
   file its original SHA-256 and size (or absent), where the original is saved,
   and what will be placed (the shim's SHA-256);
2. per file: the original is copied into ``originals/`` (temp name + rename),
   then the new content is copied to a temp name in ``torch/lib`` and
   ``os.replace``'d over the file;
3. the journal is rewritten as ``placed`` with each file's (size, mtime, inode)
   so later drift checks need not hash hundreds of MB.

Progress is read from the files themselves (current hash == original: not done;
== placed: done), so an interrupted placement can be finished or undone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.errors import LaunchError, PlacementError
from zluda_runner.core.serial import JsonMixin

JOURNAL_DIRNAME = ".zluda-runner"
JOURNAL_FILE = "journal.json"
ORIGINALS_DIR = "originals"
JOURNAL_SCHEMA = 1
IN_PROGRESS = "in-progress"
PLACED = "placed"
_TMP_TAG = ".zluda-runner-tmp"

AfterEach = Callable[[str], None]


@dataclass
class Placement(JsonMixin):
    """Copy ``source`` into torch/lib as ``dest_name``; with ``backup_name``, keep the
    original ``dest_name`` there under that name too (the fork's nvrtc loads torch's
    ``nvrtc64_112_0.dll`` as ``nvrtc_cuda.dll``)."""

    source: Path
    dest_name: str
    backup_name: str | None = None


@dataclass
class FileState(JsonMixin):
    sha256: str
    size: int


@dataclass
class JournalEntry(JsonMixin):
    name: str  # the file in torch/lib
    kind: str  # "shim" (a release file) | "backup" (a copy of another file's original)
    source: str  # kind shim: the shim's path; kind backup: the name whose original is copied
    original: FileState | None  # None: there was no such file
    placed: FileState  # the content we put there (for a shim: the shim's hash)
    saved: str | None  # the original's copy, relative to the journal folder
    placed_stat: list[int] | None = None  # [size, mtime_ns, inode] right after placement
    source_stat: list[int] | None = None  # [size, mtime_ns] of the shim when placed


@dataclass
class Journal(JsonMixin):
    schema: int
    state: str
    torch_lib: str
    entries: list[JournalEntry] = field(default_factory=list)


@dataclass
class PlacementResult(JsonMixin):
    torch_lib: Path
    journal: Path
    placed: list[str] = field(default_factory=list)  # files written by this call
    already_placed: bool = False  # nothing to do: the placement was intact
    restored_first: list[str] = field(default_factory=list)  # an older placement undone before re-placing


@dataclass
class RestoreResult(JsonMixin):
    torch_lib: Path
    restored: list[str] = field(default_factory=list)  # original put back
    removed: list[str] = field(default_factory=list)  # placed where nothing was: deleted
    unchanged: list[str] = field(default_factory=list)  # already the original
    skipped: list[str] = field(default_factory=list)  # changed since placement (pip?): left alone


@dataclass
class FileStatus(JsonMixin):
    name: str
    kind: str
    state: str  # "placed" | "original" | "changed" | "absent"
    placed_sha256: str
    actual_sha256: str | None


@dataclass
class PlacementStatus(JsonMixin):
    torch_lib: Path
    journal: Path | None
    state: str  # "none" | "in-progress" | "placed"
    files: list[FileStatus] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    needs_replace: bool = False


@dataclass
class InterruptedPlacement(JsonMixin):
    journal: Path
    done: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # neither original nor placed: cannot be finished


# ---------------------------------------------------------------- file helpers


def file_state(path: Path) -> FileState | None:
    """SHA-256 and size of ``path``, or None when it does not exist."""
    try:
        with open(path, "rb") as handle:
            digest = hashlib.sha256()
            size = 0
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
    except FileNotFoundError:
        return None
    return FileState(digest.hexdigest(), size)


def _stat_key(path: Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_copy(src: Path, dest: Path) -> None:
    """Copy ``src`` over ``dest`` through a temp file in dest's folder and ``os.replace``."""
    tmp = dest.with_name(f".{dest.name}{_TMP_TAG}-{os.getpid()}")
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
            fout.flush()
            os.fsync(fout.fileno())
        os.replace(tmp, dest)
    except PermissionError as exc:
        raise PlacementError(
            f"cannot replace {dest}: {exc.strerror}",
            hint="close every program using this torch install (python, Jupyter, ComfyUI ...) and retry",
        ) from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _fsync_dir(dest.parent)


def _check_name(name: str, what: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith(JOURNAL_DIRNAME):
        raise PlacementError(f"bad {what} {name!r}: must be a plain file name", hint="this is a planner bug")


def journal_dir_for(torch_lib: Path, journal_dir: Path | None = None) -> Path:
    return Path(journal_dir) if journal_dir is not None else Path(torch_lib) / JOURNAL_DIRNAME


def read_journal(torch_lib: Path, journal_dir: Path | None = None) -> Journal | None:
    path = journal_dir_for(torch_lib, journal_dir) / JOURNAL_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        journal = Journal.from_json(text)
    except (ValueError, TypeError, KeyError) as exc:
        raise PlacementError(
            f"the placement journal {path} is unreadable ({exc})",
            hint="reinstall torch (pip install --force-reinstall torch) and delete that folder",
        ) from exc
    if journal.schema != JOURNAL_SCHEMA:
        raise PlacementError(
            f"the placement journal {path} has schema {journal.schema}, expected {JOURNAL_SCHEMA}",
            hint="use the zluda-runner version that wrote it to restore",
        )
    return journal


def _write_journal(jdir: Path, journal: Journal) -> Path:
    jdir.mkdir(parents=True, exist_ok=True)
    path = jdir / JOURNAL_FILE
    tmp = jdir / f".{JOURNAL_FILE}{_TMP_TAG}-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(journal.to_json())
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    _fsync_dir(jdir)
    return path


def _lock(jdir: Path):  # -> filelock.FileLock (a context manager)
    import filelock

    jdir.mkdir(parents=True, exist_ok=True)
    return filelock.FileLock(str(jdir / "lock"))


def _forget(jdir: Path) -> None:
    """Remove the journal and the saved originals (after a complete restore)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(jdir / JOURNAL_FILE)
    shutil.rmtree(jdir / ORIGINALS_DIR, ignore_errors=True)
    _fsync_dir(jdir)


def _tidy(jdir: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(jdir / "lock")
    with contextlib.suppress(OSError):
        jdir.rmdir()


# ---------------------------------------------------------------- placing


def _validate(torch_lib: Path, placements: Sequence[Placement]) -> None:
    if not torch_lib.is_dir():
        raise PlacementError(f"{torch_lib} is not a folder", hint="give the target's torch/lib folder")
    if not placements:
        raise PlacementError("nothing to place", hint="this is a planner bug: no placements")
    names: list[str] = []
    for p in placements:
        _check_name(p.dest_name, "destination name")
        names.append(p.dest_name.lower())
        if p.backup_name is not None:
            _check_name(p.backup_name, "backup name")
            names.append(p.backup_name.lower())
        if not Path(p.source).is_file():
            raise PlacementError(
                f"release file {p.source} is missing", hint="fetch the release again or check --zluda-dir"
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
    saved.parent.mkdir(parents=True, exist_ok=True)
    _atomic_copy(dest, saved)
    if file_state(saved) != original:
        raise PlacementError(
            f"{dest} changed while it was being saved", hint="retry when nothing else is writing to torch/lib"
        )


def _content_source(jdir: Path, journal: Journal, entry: JournalEntry) -> Path:
    if entry.kind == "shim":
        return Path(entry.source)
    owner = next(e for e in journal.entries if e.name == entry.source and e.kind == "shim")
    assert owner.saved is not None  # a backup needs an original, checked when planned
    return jdir / owner.saved


def _apply(torch_lib: Path, jdir: Path, journal: Journal, entry: JournalEntry) -> bool:
    """Bring one file to its placed content. True when something was written."""
    dest = torch_lib / entry.name
    current = file_state(dest)
    if current == entry.placed:
        return False
    if current != entry.original:
        raise PlacementError(
            f"{dest} changed while being placed (neither the original nor the shim)",
            hint="run `zluda-run restore` to put back what can be, then reinstall torch if needed",
        )
    if entry.original is not None and entry.saved is not None:
        _save_original(dest, jdir / entry.saved, entry.original)
    source = _content_source(jdir, journal, entry)
    if file_state(source) != entry.placed:
        raise PlacementError(
            f"{source} is not the file recorded in the journal",
            hint="the release or the saved original changed: run `zluda-run restore`, then run again",
        )
    _atomic_copy(source, dest)
    return True


def _apply_all(
    torch_lib: Path, jdir: Path, journal: Journal, after_each: AfterEach | None
) -> tuple[list[str], Path]:
    written = []
    for entry in journal.entries:
        if _apply(torch_lib, jdir, journal, entry):
            written.append(entry.name)
        if after_each is not None:
            after_each(entry.name)
    for entry in journal.entries:
        entry.placed_stat = _stat_key(torch_lib / entry.name)
    journal.state = PLACED
    return written, _write_journal(jdir, journal)


def place(
    torch_lib: Path,
    placements: Sequence[Placement],
    journal_dir: Path | None = None,
    *,
    after_each: AfterEach | None = None,
) -> PlacementResult:
    """Place ``placements`` into ``torch_lib``, journaled (see the module doc).

    An intact earlier placement of the same files is left as is
    (``already_placed``); a drifted or different one is first restored, then
    placed again. ``after_each(name)`` is called after each file (tests use it
    to simulate a crash). An interrupted earlier placement raises
    :class:`PlacementError`: :func:`finish` or :func:`undo` it first.
    """
    torch_lib = Path(torch_lib)
    _validate(torch_lib, placements)
    jdir = journal_dir_for(torch_lib, journal_dir)
    try:
        return _place_locked(torch_lib, placements, jdir, journal_dir, after_each)
    finally:
        if not (jdir / JOURNAL_FILE).exists():  # refused before any change: leave no trace
            _tidy(jdir)


def _place_locked(
    torch_lib: Path,
    placements: Sequence[Placement],
    jdir: Path,
    journal_dir: Path | None,
    after_each: AfterEach | None,
) -> PlacementResult:
    with _lock(jdir):
        journal = read_journal(torch_lib, journal_dir)
        restored_first: list[str] = []
        if journal is not None and journal.state == IN_PROGRESS:
            raise PlacementError(
                f"an earlier DLL placement into {torch_lib} was interrupted",
                hint="run `zluda-run restore` to undo it (or finish it), then run again",
            )
        if journal is not None:
            current = _status_of(torch_lib, jdir, journal, deep=False)
            if not current.drift and not _sources_changed(journal, placements):
                return PlacementResult(torch_lib, jdir / JOURNAL_FILE, already_placed=True)
            outcome = _restore_entries(torch_lib, jdir, journal, force=False)
            restored_first = [*outcome.restored, *outcome.removed]
            _forget(jdir)
        entries = _entries_for(torch_lib, placements)
        journal = Journal(JOURNAL_SCHEMA, IN_PROGRESS, str(torch_lib), entries)
        _write_journal(jdir, journal)  # before any change
        written, path = _apply_all(torch_lib, jdir, journal, after_each)
        return PlacementResult(torch_lib, path, written, False, restored_first)


def detect_interrupted(torch_lib: Path, journal_dir: Path | None = None) -> InterruptedPlacement | None:
    """The interrupted placement in ``torch_lib``, if any: which files are done, pending or changed."""
    journal = read_journal(torch_lib, journal_dir)
    if journal is None or journal.state != IN_PROGRESS:
        return None
    jdir = journal_dir_for(torch_lib, journal_dir)
    found = InterruptedPlacement(jdir / JOURNAL_FILE)
    for entry in journal.entries:
        current = file_state(Path(torch_lib) / entry.name)
        if current == entry.placed:
            found.done.append(entry.name)
        elif current == entry.original:
            found.pending.append(entry.name)
        else:
            found.changed.append(entry.name)
    return found


def finish(
    torch_lib: Path, journal_dir: Path | None = None, *, after_each: AfterEach | None = None
) -> PlacementResult:
    """Complete an interrupted placement from its journal."""
    torch_lib = Path(torch_lib)
    jdir = journal_dir_for(torch_lib, journal_dir)
    with _lock(jdir):
        journal = read_journal(torch_lib, journal_dir)
        if journal is None or journal.state != IN_PROGRESS:
            raise PlacementError(
                f"no interrupted placement in {torch_lib}",
                hint="nothing to finish; `zluda-run status` shows more",
            )
        written, path = _apply_all(torch_lib, jdir, journal, after_each)
        return PlacementResult(torch_lib, path, written)


def undo(torch_lib: Path, journal_dir: Path | None = None) -> RestoreResult:
    """Roll back an interrupted (or complete) placement: the same as :func:`restore`."""
    return restore(torch_lib, journal_dir)


# ---------------------------------------------------------------- restoring


def _restore_entries(torch_lib: Path, jdir: Path, journal: Journal, *, force: bool) -> RestoreResult:
    result = RestoreResult(torch_lib)
    todo: list[tuple[JournalEntry, FileState | None]] = []
    for entry in journal.entries:
        current = file_state(torch_lib / entry.name)
        if current == entry.original:
            result.unchanged.append(entry.name)
        elif current == entry.placed or force:
            todo.append((entry, current))
        else:
            result.skipped.append(entry.name)
    missing = []
    for entry, _ in todo:  # check every saved original before changing anything
        if entry.original is not None and (
            entry.saved is None or file_state(jdir / entry.saved) != entry.original
        ):
            missing.append(entry.name)
    if missing:
        raise PlacementError(
            f"the saved originals of {', '.join(missing)} are missing or damaged in {jdir / ORIGINALS_DIR}; "
            "nothing was changed",
            hint="reinstall torch to get its own DLLs back (pip install --force-reinstall --no-deps "
            f"torch==<your version>), then delete {jdir}",
        )
    for entry, _ in reversed(todo):
        dest = torch_lib / entry.name
        if entry.original is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(dest)
            result.removed.append(entry.name)
        else:
            assert entry.saved is not None
            _atomic_copy(jdir / entry.saved, dest)
            result.restored.append(entry.name)
    return result


def restore(torch_lib: Path, journal_dir: Path | None = None, *, force: bool = False) -> RestoreResult:
    """Put back exactly what was in ``torch_lib`` before placement, then drop the journal.

    A file that changed since placement (torch reinstalled or upgraded by pip)
    is left alone and listed in ``skipped``, unless ``force``.
    """
    torch_lib = Path(torch_lib)
    jdir = journal_dir_for(torch_lib, journal_dir)
    if read_journal(torch_lib, journal_dir) is None:
        raise PlacementError(
            f"nothing to restore in {torch_lib}: no placement journal at {jdir / JOURNAL_FILE}",
            hint="zluda-runner never placed DLLs here (or already restored them)",
        )
    with _lock(jdir):
        journal = read_journal(torch_lib, journal_dir)
        if journal is None:  # restored meanwhile by a concurrent call
            raise PlacementError(f"nothing to restore in {torch_lib}", hint="it was restored meanwhile")
        result = _restore_entries(torch_lib, jdir, journal, force=force)
        _forget(jdir)
    _tidy(jdir)
    return result


# ---------------------------------------------------------------- status / drift


def _status_of(torch_lib: Path, jdir: Path, journal: Journal, *, deep: bool) -> PlacementStatus:
    status = PlacementStatus(torch_lib, jdir / JOURNAL_FILE, journal.state)
    for entry in journal.entries:
        path = torch_lib / entry.name
        if not deep and entry.placed_stat is not None and _stat_key(path) == entry.placed_stat:
            status.files.append(FileStatus(entry.name, entry.kind, "placed", entry.placed.sha256,
                                           entry.placed.sha256))
            continue
        current = file_state(path)
        if current == entry.placed:
            state = "placed"
        elif current is None:
            state = "absent"
            status.drift.append(f"{entry.name} is gone")
        elif current == entry.original:
            state = "original"
            status.drift.append(f"{entry.name} has its original content again (torch reinstalled?)")
        else:
            state = "changed"
            status.drift.append(f"{entry.name} was replaced by another file (torch upgraded, or by hand)")
        actual = current.sha256 if current else None
        status.files.append(FileStatus(entry.name, entry.kind, state, entry.placed.sha256, actual))
    return status


def _sources_changed(journal: Journal, placements: Sequence[Placement]) -> bool:
    by_name = {e.name.lower(): e for e in journal.entries if e.kind == "shim"}
    wanted = {p.dest_name.lower() for p in placements} | {
        p.backup_name.lower() for p in placements if p.backup_name
    }
    if wanted != {e.name.lower() for e in journal.entries}:
        return True
    for p in placements:
        entry = by_name.get(p.dest_name.lower())
        source = os.path.abspath(p.source)
        if entry is None or entry.source != source:
            return True
        st = os.stat(source)
        if entry.source_stat != [st.st_size, st.st_mtime_ns]:
            state = file_state(Path(source))
            if state != entry.placed:
                return True
    return False


def status(
    torch_lib: Path,
    journal_dir: Path | None = None,
    placements: Sequence[Placement] | None = None,
    *,
    deep: bool = False,
) -> PlacementStatus:
    """Is the placement intact? Drift (pip reinstalled torch, a DLL replaced) sets ``needs_replace``.

    With ``placements`` (what a run wants now), a different request also needs
    re-placing. ``deep`` hashes every file instead of trusting (size, mtime, inode).
    """
    torch_lib = Path(torch_lib)
    jdir = journal_dir_for(torch_lib, journal_dir)
    journal = read_journal(torch_lib, journal_dir)
    if journal is None:
        return PlacementStatus(torch_lib, None, "none", needs_replace=bool(placements))
    result = _status_of(torch_lib, jdir, journal, deep=deep)
    result.needs_replace = (
        journal.state != PLACED
        or bool(result.drift)
        or (placements is not None and _sources_changed(journal, placements))
    )
    return result


# ---------------------------------------------------------------- zluda.exe


def zluda_exe_argv(release_dir: Path, argv: Sequence[str]) -> list[str]:
    """``[<release>/zluda.exe, "--", *argv]``: the release's own injector (Windows only)."""
    folder = Path(release_dir)
    names = folder.iterdir() if folder.is_dir() else iter(())
    exe = next((p for p in names if p.name.lower() == "zluda.exe"), None)
    if exe is None:
        raise LaunchError(
            f"{folder} has no zluda.exe", hint="this release cannot launch by injection: use DLL placement"
        )
    if not argv:
        raise LaunchError("no command given", hint="usage: zluda-run [options] -- CMD [ARGS...]")
    return [str(exe), "--", *(str(a) for a in argv)]
