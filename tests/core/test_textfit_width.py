"""The width a view fits: ``COLUMNS`` when it is a width, else the terminal's (as shutil reads it: standard
output's, 80 when it has none), none when piped -- read without importing shutil (issue 28: ``results list``
imported shutil and the archive modules it pulls in for this one number). A real pseudo-terminal of 57
columns, not a stand-in."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = ("import json, sys\nfrom zluda_runner.core.textfit import view_width\n"
         "print(json.dumps([view_width(), 'shutil' in sys.modules]), file=sys.stderr)")


def _width(env_columns: str | None, *, on_terminal: bool) -> tuple[int | None, bool]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(ROOT)
    if env_columns is not None:
        env["COLUMNS"] = env_columns
    main_fd, side_fd = pty.openpty()
    fcntl.ioctl(side_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 57, 0, 0))
    try:
        out = side_fd if on_terminal else subprocess.DEVNULL
        proc = subprocess.run([sys.executable, "-c", PROBE], stdout=out, stderr=subprocess.PIPE, env=env,
                              text=True, timeout=60, check=True)
    finally:
        os.close(side_fd)
        os.close(main_fd)
    width, imported = json.loads(proc.stderr)
    return width, imported


@pytest.mark.parametrize(("columns", "on_terminal", "expected"), [
    (None, True, 57),  # the terminal's own width
    ("0", True, 57),  # not a width: the terminal's
    ("wide", True, 57),
    ("100", True, 100),  # COLUMNS wins
    ("100", False, 100),
    (None, False, None),  # piped: no limit
])
def test_the_width_is_the_terminals_unless_columns_says(columns: str | None, on_terminal: bool,
                                                         expected: int | None) -> None:
    assert _width(columns, on_terminal=on_terminal) == (expected, False)
