"""A store whose text columns another program filled with BLOBs still lists, shows, exports and
matrixes (hunt of 2026-12-01).

SQLite keeps a BLOB in a TEXT column as it came (``UPDATE items SET detail = X'00ff41'``, a tool that
binds ``bytes``). On e29888c one such value made ``results list`` / ``show --json`` / ``matrix`` /
``export`` end in a traceback (``bytes`` where ``str`` was meant), so the store could not even be
exported to start afresh; an ``ok`` of 'abc' counted as passing. These tests fail there.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import import_bundles
from zluda_runner.results.recording import record_report
from zluda_runner.results.schema import BundleError


def _cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path / "c"), "--results-db", url,
                                             "results", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


@pytest.fixture
def odd_store(tmp_path: Path) -> tuple[str, str]:
    url = str(tmp_path / "s" / "results.db")
    out = record_report("torch-ops", reports.torch_ops(4, {0}), settings=Settings(cache_dir=tmp_path),
                        db_url=url, command=["zluda-run", "probe"], host=reports.HOST,
                        started_at="2025-07-01T10:00:00.000000Z", release=reports.FORK)
    assert out.recorded and out.run_id, out.warning
    with sqlite3.connect(url) as conn:  # what another program left in the store
        conn.execute("UPDATE items SET detail = X'00ff41', status = CAST('mismatch' AS BLOB) WHERE seq = 0")
        conn.execute("UPDATE items SET ok = 'abc' WHERE seq = 1")
        conn.execute("UPDATE runs SET started_at = CAST(started_at AS BLOB), kind = CAST(kind AS BLOB),"
                     " host_json = CAST(host_json AS BLOB)")
    conn.close()
    return url, out.run_id


@pytest.mark.parametrize("args", [("list",), ("list", "--json"), ("show", "RUN"), ("show", "RUN", "--json"),
                                  ("matrix",), ("matrix", "--json"), ("diff", "RUN", "RUN")])
def test_blobs_in_text_columns_do_not_break_the_views(odd_store: tuple[str, str], tmp_path: Path,
                                                      args: tuple[str, ...]) -> None:
    url, run_id = odd_store
    code, out = _cli(tmp_path, url, *(run_id[:12] if a == "RUN" else a for a in args))
    assert code == 0, out
    if args == ("show", "RUN", "--json"):
        run = json.loads(out)["run"]
        assert run["kind"] == "torch-ops" and run["started_at"] == "2025-07-01T10:00:00.000000Z"
        assert run["host"]["gfx"] == "gfx1100"
        first, second = run["items"][:2]
        assert (first["status"], first["detail"], second["ok"]) == ("mismatch", "\ufffd\ufffdA", None)


def test_such_a_store_can_still_be_exported(odd_store: tuple[str, str], tmp_path: Path) -> None:
    url, _ = odd_store
    bundle = tmp_path / "out.jsonl"
    code, out = _cli(tmp_path, url, "export", str(bundle))
    assert code == 0 and "exported 1 run(s)" in out, out
    with make_store(str(tmp_path / "fresh.db")).open() as fresh:
        code, out = _cli(tmp_path, str(tmp_path / "fresh.db"), "import", str(bundle))
        assert code == 1, out
        with pytest.raises(BundleError) as caught:
            import_bundles(fresh, [bundle])
        assert (caught.value.problem, caught.value.line) == ("edited", 2)  # its id no longer matches
        assert len(fresh.list_runs()) == 0
