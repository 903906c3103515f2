"""Writing a report file the user asked for (``--html FILE``): checked first, written atomically."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.fsutil import atomic_write_text


class ReportFileError(ZludaRunnerError):
    """A report file cannot be written where the user asked."""


def destination(path: str | Path, *, keep: Sequence[Path] = ()) -> Path:
    """Where ``--html`` will write, checked before anything runs (after a probe's or a verdict's runs it
    is too late: a write that fails then loses the report): its folder exists, it is no folder, none of
    the files in ``keep`` (the results store's own, which the page would replace), and a file can be
    made in its folder (not a read-only file system, not ``/proc``, not a folder we may not write),
    unless it is already a device or pipe we can write in place (``/dev/stdout``, a FIFO)."""
    dest = Path(path).expanduser()
    if not dest.absolute().parent.is_dir():
        raise ReportFileError(f"cannot write the HTML report to {path}: its folder does not exist",
                              hint="give {opt:html} a path in an existing folder")
    if dest.is_dir():
        raise ReportFileError(f"cannot write the HTML report to {path}: it is a folder",
                              hint="give {opt:html} the path of a file (e.g. report.html), not a folder")
    target = os.path.realpath(dest)
    for kept in keep:
        if target == os.path.realpath(kept):
            raise ReportFileError(f"cannot write the HTML report to {path}: it is {kept}, a file of the "
                                  "results store, which the page would replace; nothing was written",
                                  hint="give {opt:html} another file name")
    if dest.exists() and not dest.is_file() and os.access(dest, os.W_OK):
        return dest  # a device or pipe: written in place (core/fsutil.py)
    try:
        fd, probe = tempfile.mkstemp(prefix=".zluda-run-check-", dir=dest.absolute().parent)
    except OSError as exc:
        raise ReportFileError(f"cannot write the HTML report to {path}: {exc.strerror or exc}",
                              hint="give {opt:html} a path in a folder you can write") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return dest


def write_report(path: Path, text: str) -> Path:
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise ReportFileError(f"cannot write the HTML report to {path}: {exc.strerror or exc}",
                              hint="give {opt:html} a writable file path") from None
    return path
