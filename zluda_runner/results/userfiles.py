"""The one writer of every file written where the user asked (``--html``, ``--trace-out``, ``results
export``): the same destination check before any work, an atomic write, one error type.

The rule for what may be written (README "Files zluda-run writes for you"): never one of the results
store's files (its database, ``-wal``, ``-shm``, ``-journal``: the report would replace the runs); its
folder must exist and take a new file; a folder is refused; a device or a FIFO (``/dev/stdout``) is
written in place; a symbolic link is followed: the file it names is replaced (atomically), the link
stays.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.fsutil import atomic_open, is_special
from zluda_runner.core.paths import real_path
from zluda_runner.core.settings import Settings


class OutputFileError(ZludaRunnerError):
    """A file the user asked for cannot be written where asked (nothing was written)."""


def store_files(settings: Settings) -> tuple[Path, ...]:
    """The results store's files for ``settings`` (none for a server, or a URL no store takes)."""
    from zluda_runner.results.backends import make_store, store_url

    try:
        return make_store(store_url(settings)).files()
    except ZludaRunnerError:
        return ()


def output_path(path: str | Path, keep: Sequence[Path], *, what: str = "the HTML report",
                option: str = "{opt:html}") -> Path:
    """Where a file for the user will be written (a link followed), checked before anything runs (after
    the runs it is too late: a write that fails then loses the report). ``keep``: the results store's
    files (:func:`store_files`); ``what``/``option``: for the error's words."""
    dest = Path(path).expanduser()
    if dest.is_symlink():
        dest = Path(real_path(dest))

    def refused(why: str, hint: str) -> OutputFileError:
        return OutputFileError(f"cannot write {what} to {path}: {why}", hint=hint)

    folder = dest.absolute().parent
    if not folder.is_dir():
        on_the_way = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
        raise refused(f"{on_the_way} is a file, not a folder" if on_the_way else "its folder does not exist",
                      f"give {option} a path in an existing folder")
    if dest.is_dir():
        raise refused("it is a folder", f"give {option} the path of a file, not a folder")
    for kept in keep:
        if real_path(dest) == real_path(kept):
            raise refused(f"it is {kept}, a file of the results store, which it would replace; nothing "
                          "was written", f"give {option} another file name")
    if is_special(dest) and os.access(dest, os.W_OK):
        return dest  # a device or pipe: written in place (core/fsutil.py)
    try:
        fd, probe = tempfile.mkstemp(prefix=".zluda-run-check-", dir=dest.absolute().parent)
    except OSError as exc:
        raise refused(str(exc.strerror or exc), f"give {option} a path in a folder you can write") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return dest


@contextlib.contextmanager
def open_output(path: str | Path, keep: Sequence[Path], *, what: str = "the HTML report",
                option: str = "{opt:html}", newline: str | None = None) -> Iterator[IO[Any]]:
    """:func:`output_path`, then a text file that replaces it when the block ends cleanly (OSError:
    :class:`OutputFileError`)."""
    dest = output_path(path, keep, what=what, option=option)
    try:
        with atomic_open(dest, "w", newline=newline) as out:
            yield out
    except OSError as exc:
        raise OutputFileError(f"cannot write {what} to {path}: {exc.strerror or exc}",
                              hint=f"give {option} a writable file path") from None


def write_output(path: str | Path, text: str, keep: Sequence[Path], *, what: str = "the HTML report",
                 option: str = "{opt:html}") -> Path:
    """Write ``text`` for the user (:func:`open_output`); returns the path asked for."""
    with open_output(path, keep, what=what, option=option) as out:
        out.write(text)
    return Path(path)
