"""`results import` of a FIFO nobody writes to is refused at once, never a hang (issue 20, nothing-lost
item 17). The import runs as its own process under a timeout: on 5c673db it blocked in open() and the
timeout fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_of_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "bundle.jsonl"
    os.mkfifo(fifo)
    out = subprocess.run([sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "cache"),
                          "results", "import", str(fifo)], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, stdin=subprocess.DEVNULL)
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    assert f"cannot read {fifo}: it is a FIFO (named pipe), not a regular file" in out.stderr, out.stderr
    assert "save the bundle to a file first" in out.stderr
