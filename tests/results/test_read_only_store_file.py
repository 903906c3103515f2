"""A store file that cannot be written, in a folder that can (found 2026-12-01).

On c6c0088 only a read-only *folder* opened the store read-only: a read-only store *file* not in WAL mode
(a store rebuilt with ``sqlite3 .dump``, or by another tool, is in rollback-journal mode) failed every
reader with "can only be read here ...: runs can be listed", and listed nothing. It is read now, and a
run recorded into it is a warning, never a failure."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.results import reports
from tests.results.test_matrix_cli import _cli, plant
from zluda_runner.core.settings import Settings
from zluda_runner.results.recording import record_report


@contextlib.contextmanager
def _read_only_file(path: Path) -> Iterator[None]:
    """``path`` made read-only: chmod for a user; root ignores modes, so the immutable attribute."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(0o644)
        return
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot make a file read-only as root here (chattr +i: {done.stderr.strip()})")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_a_read_only_store_file_is_read_and_not_added_to(tmp_path: Path, journal: str) -> None:
    url = str(tmp_path / "results.db")
    plant(url, tmp_path)
    conn = sqlite3.connect(url)
    assert conn.execute(f"PRAGMA journal_mode = {journal}").fetchone()[0] == journal
    conn.close()
    before = Path(url).read_bytes()
    with _read_only_file(Path(url)):
        code, out = _cli("--results-db", url, "list", "--json", tmp_path=tmp_path)
        assert code == 0, out
        runs = json.loads(out)["runs"]
        assert len(runs) == 7
        code, out = _cli("--results-db", url, "show", runs[0]["run_id"][:10], tmp_path=tmp_path)
        assert code == 0, out
        outcome = record_report("torch-ops", reports.torch_ops(2, tag="ro"),
                                settings=Settings(results_db=url), command=["zluda-run", "probe"],
                                host=reports.HOST)
        assert (outcome.recorded, outcome.error_kind) == (False, "read-only-store"), outcome
    assert Path(url).read_bytes() == before
