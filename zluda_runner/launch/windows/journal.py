"""The placement journal: what was in ``torch/lib`` before ZLUDA's DLLs were placed, and where it is kept.

Where the journal lives: ``<torch/lib>/.zluda-runner/`` (``journal.json`` plus
``originals/``). Next to the files it describes because (1) saving an original
is a copy on the same volume and putting it back a rename (no space needed: a
full disk still restores), so ``os.replace`` stays atomic; (2) the
originals must outlive the cache: a user who clears the cache must still be
able to ``zluda-run restore``; (3) writing into ``torch/lib`` is what the user
asked for by requesting placement, so no new location is touched. A caller
may pass another ``journal_dir`` (e.g. under the cache); every function takes it.

The journal is data a user (or a tool, or a disk) may have damaged, so it is read
strictly: every field's type is checked, every name must be a plain file name
(a file in ``torch/lib``) and every saved copy must lie in ``originals/``; nothing
else read from it is ever used as a path. A damaged journal is a
:class:`PlacementError` naming the file and the fault, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zluda_runner.core.errors import PlacementError
from zluda_runner.core.fsutil import TMP_PREFIX, atomic_write_text, fsync_dir
from zluda_runner.core.replace import InUseCheck, replace_file
from zluda_runner.core.serial import JsonMixin

JOURNAL_DIRNAME = ".zluda-runner"
JOURNAL_FILE = "journal.json"
ORIGINALS_DIR = "originals"
JOURNAL_SCHEMA = 1
IN_PROGRESS = "in-progress"
PLACED = "placed"
# A restore (or the undoing before a re-placement) has begun changing files: said by an empty file beside
# the journal (no space needed: a full disk still restores); read as the journal's state.
RESTORING = "restoring"
# Temp names of earlier versions (``.<name>.zluda-runner-tmp-<pid>``); current ones are fsutil's.
_LEGACY_TMP_TAG = ".zluda-runner-tmp"
_MAX_JOURNAL_BYTES = 4 << 20
_MAX_ENTRIES = 1000


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
    source: str  # kind shim: the shim's path (informational only); kind backup: the entry whose original
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
    except (FileNotFoundError, NotADirectoryError):
        return None
    return FileState(digest.hexdigest(), size)


def stat_key(path: Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def copy_into(src: Path, dest: Path, doing: str = "replace a file in torch/lib", *,
              check: InUseCheck | None = None) -> None:
    """Atomic, durable copy; a file held by a running program is a FileInUseError naming it (and the
    program, where Windows can tell), any other denial a PlacementError."""
    try:
        replace_file(src, dest, doing, check=check)
    except PermissionError as exc:
        raise PlacementError(
            f"cannot replace {dest}: {exc.strerror}",
            hint="close every program using this torch install (python, Jupyter, ComfyUI ...) and retry",
        ) from exc


def move_into(src: Path, dest: Path, doing: str, *, check: InUseCheck | None = None) -> None:
    """Put the checked saved original ``src`` in place of ``dest`` by a rename: on the same file system
    it needs no space (a full disk, a file-size limit). Across file systems (a ``journal_dir``
    elsewhere), or a file held on Windows, a copy (:func:`copy_into`, which names the holder)."""
    try:
        os.replace(src, dest)
    except OSError as exc:
        if exc.errno != errno.EXDEV and not (sys.platform == "win32" and isinstance(exc, PermissionError)):
            raise
        copy_into(src, dest, doing, check=check)
        return
    fsync_dir(Path(dest).parent)


def is_plain_name(name: object) -> bool:
    """A file name with no folder part, safe on Windows and POSIX alike."""
    return (
        isinstance(name, str)
        and bool(name)
        and name not in (".", "..")
        and not any(c in name for c in '/\\:\0')
        and not name.startswith(JOURNAL_DIRNAME)
        and name == name.strip()
    )


def check_name(name: str, what: str) -> None:
    if not is_plain_name(name):
        raise PlacementError(f"bad {what} {name!r}: must be a plain file name", hint="this is a planner bug")


def remove_stale_temps(torch_lib: Path, names: list[str]) -> list[str]:
    """Delete the temp files a killed copy of one of ``names`` left in ``torch_lib``; their names."""
    wanted = {n.lower() for n in names}
    removed = []
    try:
        listing = list(os.listdir(torch_lib))
    except OSError:
        return []
    for entry in listing:
        lowered = entry.lower()
        ours = any(
            lowered.startswith(f"{TMP_PREFIX}{n}.") or lowered.startswith(f".{n}{_LEGACY_TMP_TAG}-")
            for n in wanted
        )
        if ours:
            with contextlib.suppress(OSError):
                os.unlink(torch_lib / entry)
                removed.append(entry)
    return removed


# ---------------------------------------------------------------- whose a file is

# A placed file's state, read from the file itself.
ST_PLACED, ST_ORIGINAL, ST_CHANGED, ST_MISSING, ST_EMPTY = "placed", "original", "changed", "missing", "empty"
# Who made a file what it is now (None: it is as placed).
BY_PLACING = "placing"  # not placed yet: the placement (journal in-progress) stopped before it
BY_RESTORING = "restoring"  # already put back: the restore (journal restoring) stopped after it
BY_OTHER = "other"  # not zluda-run: pip (re)installed torch, an antivirus, a hand copy


def classify(entry: JournalEntry, current: FileState | None) -> str:
    if current == entry.placed:
        return ST_PLACED
    if current is None:
        return ST_MISSING
    if current == entry.original:
        return ST_ORIGINAL
    if current.size == 0:
        return ST_EMPTY
    return ST_CHANGED


def is_before(entry: JournalEntry, state: str) -> bool:
    """Is the file as it was before placement (its original content, or absent as it was)?"""
    return state == ST_ORIGINAL or (state == ST_MISSING and entry.original is None)


def is_ours(entry: JournalEntry, state: str, torch_lib: Path | None = None) -> bool:
    """Is the file zluda-run's to put back: the content it placed, or its placed file gone or emptied
    (nothing of anyone's is lost by putting the original there)? A ``changed`` file was written by
    another program (pip upgraded torch): it is that program's, never replaced; unless (``torch_lib``
    given) it is the very file placed, never written since (its size, mtime and inode as recorded),
    whose recorded hash is what changed."""
    if state in (ST_PLACED, ST_EMPTY) or (state == ST_MISSING and entry.original is not None):
        return True
    return (state == ST_CHANGED and torch_lib is not None and entry.placed_stat is not None
            and stat_key(torch_lib / entry.name) == entry.placed_stat)


def made_by(journal_state: str, entry: JournalEntry, state: str) -> str | None:
    """Who made the file ``state`` (see ``BY_*``): zluda-run itself, when the journal says a placement
    or a restore stopped half-way and the file is as that left it; else another program."""
    if state == ST_PLACED:
        return None
    if is_before(entry, state) and journal_state == IN_PROGRESS:
        return BY_PLACING
    if is_before(entry, state) and journal_state == RESTORING:
        return BY_RESTORING
    return BY_OTHER


# ---------------------------------------------------------------- journal on disk


def journal_dir_for(torch_lib: Path, journal_dir: Path | None = None) -> Path:
    return Path(journal_dir) if journal_dir is not None else Path(torch_lib) / JOURNAL_DIRNAME


def saved_path(jdir: Path, entry: JournalEntry) -> Path | None:
    """Where ``entry``'s original is kept: always inside ``<journal>/originals`` (checked when read)."""
    return None if entry.saved is None else jdir / entry.saved


class _Bad(Exception):
    pass


def _want(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise _Bad(f"{what} is {json.dumps(value)[:60]}")
    return value


def _state(value: Any, what: str) -> FileState | None:
    if value is None:
        return None
    _want(value, dict, what)
    sha = _want(value.get("sha256"), str, f"{what}.sha256")
    if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise _Bad(f"{what}.sha256 is not a SHA-256")
    size = _want(value.get("size"), int, f"{what}.size")
    if size < 0:
        raise _Bad(f"{what}.size is negative")
    return FileState(sha, size)


def _ints(value: Any, what: str) -> list[int] | None:
    if value is None:
        return None
    _want(value, list, what)
    return [_want(v, int, what) for v in value]


def _entry(raw: Any, where: str) -> JournalEntry:
    _want(raw, dict, where)
    name = raw.get("name")
    if not is_plain_name(name):
        raise _Bad(f"{where}.name {json.dumps(name)[:60]} is not a plain file name in torch/lib")
    kind = raw.get("kind")
    if kind not in ("shim", "backup"):
        raise _Bad(f"{where}.kind is {json.dumps(kind)[:40]}")
    source = _want(raw.get("source"), str, f"{where}.source")
    original = _state(raw.get("original"), f"{where}.original")
    placed = _state(raw.get("placed"), f"{where}.placed")
    if placed is None:
        raise _Bad(f"{where}.placed is missing")
    saved = raw.get("saved")
    if saved is not None:
        _want(saved, str, f"{where}.saved")
        folder, _, base = saved.partition("/")
        if folder != ORIGINALS_DIR or not is_plain_name(base):
            raise _Bad(f"{where}.saved {saved!r} is not a file in {ORIGINALS_DIR}/")
    if original is not None and saved is None:
        raise _Bad(f"{where} has an original but no saved copy")
    return JournalEntry(
        name=name, kind=kind, source=source, original=original, placed=placed, saved=saved,
        placed_stat=_ints(raw.get("placed_stat"), f"{where}.placed_stat"),
        source_stat=_ints(raw.get("source_stat"), f"{where}.source_stat"),
    )


def parse_journal(data: bytes) -> Journal:
    """A journal from its bytes, every field checked; ``_Bad`` (internal) on any fault."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _Bad(f"not JSON ({str(exc)[:80]})") from exc
    _want(raw, dict, "the journal")
    schema = _want(raw.get("schema"), int, "schema")
    if schema != JOURNAL_SCHEMA:
        raise _Bad(f"schema {schema}, expected {JOURNAL_SCHEMA}")
    state = raw.get("state")
    if state not in (IN_PROGRESS, PLACED):
        raise _Bad(f"state is {json.dumps(state)[:40]}")
    torch_lib = _want(raw.get("torch_lib"), str, "torch_lib")
    entries_raw = _want(raw.get("entries"), list, "entries")
    if len(entries_raw) > _MAX_ENTRIES:
        raise _Bad(f"{len(entries_raw)} entries")
    entries = [_entry(e, f"entries[{i}]") for i, e in enumerate(entries_raw)]
    names = [e.name.lower() for e in entries]
    if len(set(names)) != len(names):
        raise _Bad("two entries name the same file")
    shims = {e.name for e in entries if e.kind == "shim"}
    for e in entries:
        if e.kind == "backup" and e.source not in shims:
            raise _Bad(f"backup entry {e.name} refers to {e.source!r}, which is not a placed file")
    return Journal(schema, state, torch_lib, entries)


def read_journal(torch_lib: Path, journal_dir: Path | None = None) -> Journal | None:
    """The journal, or None when there is none; a damaged one is a clear :class:`PlacementError`."""
    jdir = journal_dir_for(torch_lib, journal_dir)
    path = jdir / JOURNAL_FILE
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_JOURNAL_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PlacementError(f"cannot read the placement journal {path}: {exc.strerror or exc}",
                             hint="check the folder's permissions") from exc
    try:
        if len(data) > _MAX_JOURNAL_BYTES:
            raise _Bad("larger than any journal we write")
        journal = parse_journal(data)
        if (jdir / RESTORING).exists():
            journal.state = RESTORING
        return journal
    except _Bad as exc:
        raise PlacementError(
            f"the placement journal {path} is damaged: {exc}",
            hint=f"nothing was changed. Your original DLLs are kept in {jdir / ORIGINALS_DIR}; copy them "
            "back "
            "into torch/lib by hand, or reinstall torch (pip install --force-reinstall --no-deps "
            f"torch==<your version>); then delete {jdir}",
        ) from exc


def write_journal(jdir: Path, journal: Journal) -> Path:
    path = jdir / JOURNAL_FILE
    assert journal.state != RESTORING, "a restore is marked by mark_restoring"
    atomic_write_text(path, journal.to_json(), durable=True)
    return path


LOCK_FILE = "lock"


class JournalLock:
    """``<jdir>/lock``: one place or restore at a time in a ``torch/lib``, a lock that may be removed.

    A complete restore (or a placement refused before any change) leaves no trace: the lock file and
    the journal folder go. So a process waiting for the lock may find its folder gone, or hold a
    file that was unlinked meanwhile: it then takes the lock again (the folder made anew), never a
    FileNotFoundError, never two holders. ``drop = True`` (set while held) removes the file and the
    folder on release: on POSIX the file is unlinked *while held* (a waiter then sees it is not the
    file at that path any more); on Windows a held file cannot be deleted, so it goes right after.
    """

    def __init__(self, jdir: Path) -> None:
        self.jdir = Path(jdir)
        self.path = self.jdir / LOCK_FILE
        self.drop = False
        self._fd: int | None = None

    def acquire(self, *, wait: bool = True) -> bool:
        """Take the lock (False: ``wait=False`` and another process holds it)."""
        while True:
            self.jdir.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            except FileNotFoundError:
                continue  # the folder went (a restore finished) between mkdir and open: again
            try:
                if not _lock_fd(fd, wait):
                    os.close(fd)
                    return False
                if _is_at(fd, self.path):
                    self._fd, self.drop = fd, False
                    return True
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # the file was removed while we waited: that lock is no lock; take the new one

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if self.drop:
            _remove_journal_temps(self.jdir)  # while held: a next holder's own temp file is not touched
            if sys.platform != "win32":
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
        try:
            _unlock_fd(fd)
        finally:
            os.close(fd)
        if self.drop:
            if sys.platform == "win32":
                with contextlib.suppress(OSError):
                    os.unlink(self.path)  # a waiter that has it open keeps it: then it is theirs
            with contextlib.suppress(OSError):
                self.jdir.rmdir()  # only if empty: a next holder's lock file keeps it

    def __enter__(self) -> JournalLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


if sys.platform == "win32":
    import msvcrt

    def _lock_fd(fd: int, wait: bool) -> bool:
        while True:  # polled: LK_LOCK gives up after 10 tries anyway
            try:
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                return True
            except OSError as exc:  # held by another: EACCES (Wine's msvcrt: errno 0)
                if exc.errno not in (0, errno.EACCES, errno.EDEADLOCK):
                    raise
                if not wait:
                    return False
            time.sleep(0.05)

    def _unlock_fd(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

    def _is_at(fd: int, path: Path) -> bool:
        return True  # an open file cannot be deleted or renamed over on Windows: it is the one at path

else:
    import fcntl

    def _lock_fd(fd: int, wait: bool) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    def _is_at(fd: int, path: Path) -> bool:
        try:
            return os.path.samestat(os.fstat(fd), os.lstat(path))
        except OSError:
            return False


def _remove_journal_temps(jdir: Path) -> None:
    """The journal's temp files a killed write left, and a killed :func:`forget`'s restore mark (only the
    lock's holder may remove them)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(jdir):
            if name.startswith(f"{TMP_PREFIX}{JOURNAL_FILE}.") or (
                    name == RESTORING and not (jdir / JOURNAL_FILE).exists()):  # a killed forget's
                os.unlink(jdir / name)


def lock(jdir: Path) -> JournalLock:
    """The placement lock of ``jdir`` (a context manager; see :class:`JournalLock`)."""
    return JournalLock(jdir)


def mark_restoring(jdir: Path, journal: Journal) -> None:
    """Before a restore's first change: the journal's state becomes ``restoring`` (an empty file, durable;
    where even that cannot be written, the restore goes on unmarked)."""
    journal.state = RESTORING
    with contextlib.suppress(OSError):
        os.close(os.open(jdir / RESTORING, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644))
        fsync_dir(jdir)


def forget(jdir: Path) -> None:
    """Remove the journal and the saved originals (after a complete restore)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(jdir / JOURNAL_FILE)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(jdir / RESTORING)
    shutil.rmtree(jdir / ORIGINALS_DIR, ignore_errors=True)
    fsync_dir(jdir)


def sweep_stale_lock(jdir: Path) -> bool:
    """A journal folder holding no journal (a placement killed before it wrote one left its lock):
    remove it, unless a process holds the lock now. True: it was removed."""
    if not jdir.is_dir() or (jdir / JOURNAL_FILE).exists() or (jdir / ORIGINALS_DIR).exists():
        return False
    held = JournalLock(jdir)
    if not held.acquire(wait=False):
        return False
    held.drop = not (jdir / JOURNAL_FILE).exists() and not (jdir / ORIGINALS_DIR).exists()
    held.release()
    return held.drop and not jdir.exists()


def sources_changed(journal: Journal, placements: Sequence[Placement]) -> bool:
    """Does ``placements`` ask for something else than what ``journal`` placed?"""
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
        try:
            st = os.stat(source)
        except OSError:
            return True
        if entry.source_stat != [st.st_size, st.st_mtime_ns] and file_state(Path(source)) != entry.placed:
            return True
    return False
