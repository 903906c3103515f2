"""`results import` of a FIFO nobody writes to is refused at once, never a hang (issue 20, nothing-lost
item 17). The import runs as its own process under a timeout: on 5c673db it blocked in open() and the
timeout fails the test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_of_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "bundle.jsonl"
    os.mkfifo(fifo)
    argv = [sys.executable, "-m", "zluda_runner", "--json", "--cache-dir", str(tmp_path / "cache"),
            "results", "import", str(fifo)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 1 and "Traceback" not in out.stderr, (out.stdout, out.stderr)
    error = json.loads(out.stdout)  # the data, not the wording folded to the terminal's width
    assert (error["kind"], error["exit_code"], error["details"]) == (
        "bundle", 1, {"problem": "not-a-file", "line": None}), error
    assert str(fifo) in error["error"] and "FIFO" in error["error"], error
