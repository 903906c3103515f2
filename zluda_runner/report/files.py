"""Writing a report file the user asked for (``--html FILE``): checked first, written atomically."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.fsutil import atomic_write_text


class ReportFileError(ZludaRunnerError):
    """A report file cannot be written where the user asked."""


def destination(path: str | Path, *, keep: Sequence[Path] = ()) -> Path:
    """Where ``--html`` will write, checked before anything runs: its folder must exist, and it is none
    of the files in ``keep`` (the results store's own, which the page would replace)."""
    dest = Path(path).expanduser()
    if not dest.absolute().parent.is_dir():
        raise ReportFileError(f"cannot write the HTML report to {path}: its folder does not exist",
                              hint="give {opt:html} a path in an existing folder")
    target = os.path.realpath(dest)
    for kept in keep:
        if target == os.path.realpath(kept):
            raise ReportFileError(f"cannot write the HTML report to {path}: it is {kept}, a file of the "
                                  "results store, which the page would replace; nothing was written",
                                  hint="give {opt:html} another file name")
    return dest


def write_report(path: Path, text: str) -> Path:
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise ReportFileError(f"cannot write the HTML report to {path}: {exc.strerror or exc}",
                              hint="give {opt:html} a writable file path") from None
    return path
