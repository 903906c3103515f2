"""The one bounded read of a file (:func:`read_regular`): only a regular file, at most so many bytes, never a
wait on a FIFO or a device. Small on purpose (``os``, ``stat``, ``errno``, ``io``): the launch memo's hit
path (:mod:`zluda_runner.commands.launchmemo`) re-reads the host's small files through it;
:mod:`zluda_runner.core.fsutil` exports the same names."""

from __future__ import annotations

import errno
import io
import os
import stat


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


def open_regular(path: str | os.PathLike[str]) -> io.BufferedReader:
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

    def __init__(self, path: str | os.PathLike[str], size: int | None, limit: int) -> None:
        held = f"it holds {size} bytes" if size is not None else "it grew while being read"
        super().__init__(errno.EFBIG, f"{held}, more than the {limit} read", str(path))
        self.size, self.limit = size, limit


def read_regular(path: str | os.PathLike[str], limit: int, *, more: bool = False) -> bytes:
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
