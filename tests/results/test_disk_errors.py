"""A full disk or a path that cannot be made is not an "unusable" store (hunt of 2026-12-01).

On e29888c an import or a recording that a full disk (here: a file-size limit, ``ulimit -f``) stopped
said "the results store ... is unusable: disk I/O error" and advised moving the store aside, although
SQLite had kept it whole; a store whose folder could not be made (a file in the way, /proc) got the
same advice for a file that did not exist. A path with a space got an ``mv`` line that splits it.
These tests fail there.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import export_bundle
from zluda_runner.results.recording import record_report

ROOT = Path(__file__).resolve().parents[2]


def _cli(tmp_path: Path, url: str, *args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(tmp_path / "c"),
                                             "--results-db", url, "results", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, json.loads(result.output)


def _limited(limit_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))


def test_an_import_a_full_disk_stops_keeps_the_store_and_says_so(tmp_path: Path) -> None:
    source = str(tmp_path / "src.db")
    for n in range(3):
        assert record_report("torch-ops", reports.torch_ops(400, tag=f"-{n}-" + "x" * 300),
                             settings=Settings(cache_dir=tmp_path), db_url=source, command=["p", str(n)],
                             host=reports.HOST, started_at=f"2025-09-0{n + 1}T10:00:00.000000Z").recorded
    bundle = tmp_path / "b.jsonl"
    with make_store(source).open() as store:
        export_bundle(store, bundle)
    target = tmp_path / "dst.db"
    assert record_report("torch-ops", reports.torch_ops(2), settings=Settings(cache_dir=tmp_path),
                         db_url=str(target), command=["kept"], host=reports.HOST).recorded
    with make_store(str(target)).open():
        pass  # checkpointed and closed: the file is whole, the limit below is under what the import needs
    limit = target.stat().st_size + 64 * 1024
    out = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--json", "--results-db", str(target), "results", "import",
         str(bundle)],
        capture_output=True, text=True, timeout=120, cwd=ROOT, stdin=subprocess.DEVNULL,
        env={**os.environ, "ZLUDA_RUNNER_CACHE": str(tmp_path / "c"), "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=lambda: _limited(limit),  # no bytecode written under the limit: a cut .pyc breaks imports
    )
    assert out.returncode == 1, (out.stdout, out.stderr)
    error = json.loads(out.stdout)
    assert (error["kind"], error["exit_code"]) == ("store-write-failed", 1), error  # the disk, not the store
    assert "mv " not in error["hint"], error
    with sqlite3.connect(target) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT COUNT(*) FROM runs WHERE command_json = '[\"kept\"]'").fetchone() == (1,)
    conn.close()


def test_a_store_whose_folder_cannot_be_made_gets_no_move_it_aside_advice(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("in the way")
    bundle = tmp_path / "b.jsonl"  # importing makes a store (a reader does not: it says none is there)
    bundle.write_text(json.dumps({"format": "zluda-runner-results", "version": 1}) + "\n", encoding="utf-8")
    for url in (str(tmp_path / "a-file" / "results.db"), "/proc/self/no-such/results.db"):
        code, error = _cli(tmp_path, url, "import", str(bundle))
        assert code == 1, error
        assert str(error["error"]).startswith(f"cannot make the results store {url}: "), error
        assert error["kind"] == "results-store", error
        assert "mv " not in str(error["hint"]) and "--results-db" in str(error["hint"]), error
        code, error = _cli(tmp_path, url, "list")
        assert code == 1 and str(error["error"]).startswith(f"no results store at {url}; "), error
        assert "mv " not in str(error["hint"]), error
    assert (tmp_path / "a-file").read_text() == "in the way"


def test_the_move_it_aside_line_can_be_pasted_for_a_path_with_a_space(tmp_path: Path) -> None:
    junk = tmp_path / "my results" / "results.db"
    junk.parent.mkdir()
    junk.write_bytes(b"junk" * 1000)
    code, error = _cli(tmp_path, str(junk), "list")
    assert code == 1 and "is unusable" in str(error["error"]), error
    hint = str(error["hint"])
    mv = hint[hint.index("(mv ") + 1: hint.index(")")]
    assert shlex.split(mv) == ["mv", str(junk), f"{junk}.bad"], hint
