"""The terminal's width as ``shutil.get_terminal_size()`` reads it (core/termsize), without importing shutil:
``COLUMNS`` when it is a positive number, else the width of standard output's terminal, else 80. Compared
with shutil itself in the same process, on a real pseudo-terminal of 57 columns and piped."""

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
PROBE = ("import json, sys\nfrom zluda_runner.core.termsize import terminal_columns\n"
         "ours, imported = terminal_columns(), 'shutil' in sys.modules\nimport shutil\n"
         "print(json.dumps([ours, shutil.get_terminal_size().columns, imported]), file=sys.stderr)")


def _columns(env_columns: str | None, *, on_terminal: bool) -> tuple[int, int, bool]:
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
    ours, theirs, imported = json.loads(proc.stderr)
    return ours, theirs, imported


@pytest.mark.parametrize("env_columns", [None, "", "0", "-3", "abc", "100", " 90"])
@pytest.mark.parametrize("on_terminal", [True, False])
def test_the_width_is_shutil_s(env_columns: str | None, on_terminal: bool) -> None:
    ours, theirs, imported = _columns(env_columns, on_terminal=on_terminal)
    assert ours == theirs and not imported
    expected = {"100": 100, " 90": 90}.get(env_columns or "", 57 if on_terminal else 80)
    assert ours == expected
