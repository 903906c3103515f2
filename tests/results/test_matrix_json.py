"""The matrix's JSON reads back whole (``Matrix.from_json``), known-good locks and all, in a fresh interpreter
that has not imported the release stack: ``KnownLock.lock``'s type is imported for the type checker only
(issue 28: the matrix of a store without find runs no longer imports it), and is found when a record is read
back (core/serial.py through core/argcheck.py's reader of TYPE_CHECKING imports)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conduct.test_lock import _lock, _release
from zluda_runner.results.locks import KnownLock
from zluda_runner.results.matrix import Cell, Failing, Matrix, Rate

ROOT = Path(__file__).resolve().parents[2]
READ_BACK = ("import sys\nfrom zluda_runner.results.matrix import Matrix\n"
             "before = 'zluda_runner.release.lockfile' in sys.modules\n"
             "matrix = Matrix.from_json(sys.stdin.read())\n"
             "print(before, type(matrix.locks[0].lock).__name__)\nprint(matrix.to_json())")


def test_the_matrix_reads_back_with_its_locks(tmp_path: Path) -> None:
    lock = _lock(_release(tmp_path))
    matrix = Matrix(cells=[Cell("fork-3.9.5", "gfx1100", "2.7.0+cu126", 3, "2025-03-02T09:00:00.000000Z",
                                Rate(97, 100, "ab" * 32, "2025-03-02T09:00:00.000000Z"),
                                failing=[Failing("torch-ops", "matmul/float16", "mismatch", "max err 0.5")])],
                    runs=3, locks=[KnownLock("gfx1100", "2.7.0+cu126", "zluda", "cudnn-off", False, "cd" * 32,
                                             "2025-03-03T09:00:00.000000Z", lock)])
    proc = subprocess.run([sys.executable, "-c", READ_BACK], input=matrix.to_json(), capture_output=True,
                          text=True, timeout=60, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    first, text = proc.stdout.split("\n", 1)
    assert first == "False Lock"  # not imported before it was needed; a Lock after
    assert Matrix.from_json(text) == matrix and text.strip() == matrix.to_json()
