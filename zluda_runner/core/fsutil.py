"""Atomic file writes: one helper for every file we create or replace.

A write goes to a temporary file in the destination's folder, is flushed (and
fsynced when asked), then renamed over the destination: a reader sees the old
file or the new one, never half of one, and an interrupted write leaves at
most a ``.tmp-*`` file that later writes ignore.

That is for a regular file or a new name only. A destination that is something else (``/dev/null``,
``/dev/full``, a terminal, a FIFO or a pipe such as ``>(cat)``) is written in place, as a shell's
``>`` writes it: a rename would replace the device node by a regular file (as root, silently). A FIFO
is opened without waiting for a reader: none is an error at once (ENXIO), never a hang.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

TMP_PREFIX = ".tmp-"


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class NotRegularFileError(OSError):
    """A file to read is not a regular file (a FIFO, a device, a socket, a folder): refused, unread."""


_KINDS = ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """What a file of stat mode ``mode`` is, as a message names it ("a folder", "a FIFO (named pipe)",
    "a character device" ...): the one name every refusal of a file by its type uses."""
    return next((name for test, name in _KINDS if test(mode)),
                f"a file of unknown type (mode {oct(stat.S_IFMT(mode))})")


def open_regular(path: Path) -> io.BufferedReader:
    """Open ``path`` for reading if it is a regular file, else :class:`NotRegularFileError`.

    Opened without waiting (O_NONBLOCK) and checked on the open file itself (no race with a
    rename): a FIFO with no writer, ``/dev/zero`` or a terminal is refused at once instead of
    blocking or reading forever."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    flags = os.O_RDONLY | nonblock | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(errno.EINVAL, f"it is {file_kind(mode)}, not a regular file", str(path))
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class FileTooLargeError(OSError):
    """A file to read holds more than its reader takes (``size``: its size; None: it grew while read)."""

    def __init__(self, path: Path, size: int | None, limit: int) -> None:
        held = f"it holds {size} bytes" if size is not None else "it grew while being read"
        super().__init__(errno.EFBIG, f"{held}, more than the {limit} read", str(path))
        self.size, self.limit = size, limit


def read_regular(path: Path, limit: int, *, more: bool = False) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` (:func:`open_regular`: a FIFO, a device,
    a folder is refused unread). A larger file is a :class:`FileTooLargeError`, unless ``more``: then
    ``limit + 1`` bytes come back, the last showing there was more. The one bounded read of a file."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit and not more:
            raise FileTooLargeError(path, size, limit)
        data = fh.read(limit + 1)
    if len(data) > limit and not more:
        raise FileTooLargeError(path, None, limit)
    return data


def is_special(path: Path) -> bool:
    """``path`` (links followed) exists and is neither a regular file nor a folder: a device, a FIFO,
    a socket. Such a file is written in place, never renamed over."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def open_special(path: Path, mode: str = "wb", *, newline: str | None = None) -> IO[Any]:
    """Open a special file (see :func:`is_special`) for writing in place; a FIFO no program reads is
    an OSError at once (ENXIO) instead of a wait for a reader that may never come."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, os.O_WRONLY | nonblock | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "it is a FIFO that no program is reading", str(path)) from exc
        raise
    try:
        if nonblock:
            os.set_blocking(fd, True)  # a reader is there: write as a shell would
        return os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8",
                         newline=None if "b" in mode else newline)
    except BaseException:
        os.close(fd)
        raise


def make_folder(folder: Path) -> None:
    """``mkdir -p``; a file on the way is ENOTDIR naming it (mkdir says only "File exists")."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        on_the_way = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), folder)
        message = f"{on_the_way} is a file, not a folder"
        raise NotADirectoryError(errno.ENOTDIR, message, str(folder)) from None


@contextlib.contextmanager
def atomic_open(path: Path, mode: str = "wb", *, durable: bool = False,
                newline: str | None = None) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; on a clean exit it replaces ``path``. A special file
    (a device, a FIFO) is written in place instead (see the module doc)."""
    path = Path(path)
    if is_special(path):
        with open_special(path, mode, newline=newline) as fh:
            yield fh
        return
    make_folder(path.parent)
    fd, tmp = temp_beside(path)
    encoding = None if "b" in mode else "utf-8"
    try:
        with os.fdopen(fd, mode, encoding=encoding, newline=None if "b" in mode else newline) as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if durable:
            fsync_dir(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


_TEMP_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
               | getattr(os, "O_NOINHERIT", 0) | getattr(os, "O_CLOEXEC", 0))


def temp_beside(path: Path) -> tuple[int, str]:
    """A new temporary file next to ``path`` with the permissions a plain create gives (``0o666`` less
    the umask, as a shell's ``>`` or ``open(path, "w")`` makes it; ``mkstemp``'s ``0o600`` made every
    exported bundle and report private), or ``path``'s own when it replaces one (as an editor keeps a
    file's mode)."""
    keep: int | None = None
    if os.name != "nt":
        with contextlib.suppress(OSError):
            st = os.stat(path)
            keep = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
    for _ in range(100):
        tmp = os.path.join(path.parent, f"{TMP_PREFIX}{path.name}.{os.urandom(6).hex()}")
        try:
            fd = os.open(tmp, _TEMP_FLAGS, 0o666)
        except FileExistsError:
            continue
        if keep is not None:
            try:
                os.fchmod(fd, keep)
            except OSError:
                os.close(fd)
                os.unlink(tmp)
                raise
        return fd, tmp
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(path.parent))


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = False) -> None:
    with atomic_open(path, "wb", durable=durable) as fh:
        fh.write(data)


def atomic_write_text(path: Path, text: str, *, durable: bool = False) -> None:
    with atomic_open(path, "w", durable=durable) as fh:
        fh.write(text)


def write_if_changed(path: Path, text: str) -> bool:
    """:func:`atomic_write_text` unless ``path`` already holds ``text`` (a generated source whose
    unchanged mtime keeps a build cached); True when it wrote."""
    path = Path(path)
    try:
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write_text(path, text)
    return True


def atomic_write_json(path: Path, data: Any, *, durable: bool = False, compact: bool = False) -> None:
    text = json.dumps(data, separators=(",", ":")) if compact else json.dumps(data, indent=2)
    atomic_write_text(path, text + "\n", durable=durable)


def atomic_copy(src: Path, dest: Path, *, durable: bool = True) -> None:
    """Copy ``src`` over ``dest`` (contents and mode), atomically."""
    import shutil  # here, as tempfile below: what only copies need (a reader of a file kind does not)

    with atomic_open(dest, "wb", durable=durable) as out, open(src, "rb") as inp:
        shutil.copyfileobj(inp, out, 1 << 20)
    with contextlib.suppress(OSError):
        shutil.copymode(src, dest)


@contextlib.contextmanager
def atomic_output(path: Path) -> Iterator[Path]:
    """A path under ``path``'s exact name in a private temporary folder beside it, for a program that
    writes the file itself (a compiler, a linker: a PE DLL records its own file name); on a clean exit
    that file is renamed over ``path``, and the folder is removed either way."""
    path = Path(path)
    make_folder(path.parent)
    import shutil
    import tempfile

    work = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{path.name}.", dir=path.parent))
    try:
        yield work / path.name
        os.replace(work / path.name, path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def try_atomic_write_json(path: Path, data: Any) -> bool:
    """:func:`atomic_write_json` for caches: an unwritable cache only costs speed (False)."""
    try:
        atomic_write_json(path, data, compact=True)
    except OSError:
        return False
    return True
