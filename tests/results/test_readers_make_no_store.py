"""A reader never makes a results store (leftovers of 2026-12-01).

On 720a795 ``zluda-run results --results-db MISTYPED.db list`` (and show, diff, matrix, export, delete,
and the API's readers given that store) made an empty store at the mistyped path and said "no runs
recorded". A store that is named and not there is now an error naming the path (with ``--json``), and
nothing is written there (no file, no ``-wal``/``-shm``); the default store before anything was
recorded still lists as empty, without being made. Importing and recording still make a store."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import zluda_runner as zr
from tests.golden import assert_golden
from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings
from zluda_runner.results.queries import summary_for_gpu
from zluda_runner.results.recording import record_report
from zluda_runner.results.schema import NoResultsStoreError, ResultsStoreError

READERS = (("list",), ("show", "abcd"), ("diff", "abcd", "abce"), ("matrix",), ("export", "out.jsonl"),
           ("delete", "abcd"))


@pytest.fixture(autouse=True)
def _no_store_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ZLUDA_RUNNER_RESULTS_DB", raising=False)
    monkeypatch.setenv("ZLUDA_RUNNER_CACHE", str(tmp_path / "env-cache"))
    monkeypatch.chdir(tmp_path)


def _cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path / "cache"), *args], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "header-only.jsonl"
    bundle.write_text(json.dumps({"format": "zluda-runner-results", "version": 1}) + "\n", encoding="utf-8")
    return bundle


@pytest.mark.parametrize("words", READERS, ids=[w[0] for w in READERS])
def test_a_reader_of_a_mistyped_store_says_so_and_makes_nothing(tmp_path: Path,
                                                                 words: tuple[str, ...]) -> None:
    before = _tree(tmp_path)
    code, out = _cli(tmp_path, "results", "--results-db", "MISTYPED.db", *words)
    assert code == 1, out
    assert f"MISTYPED.db ({tmp_path / 'MISTYPED.db'})" in out, out  # the path as given, and where it is
    assert "--results-db" in out.split("hint: ")[1] and "`zluda-run results import`" in out, out
    assert "Traceback" not in out and "no runs" not in out
    code, out = _cli(tmp_path, "--json", "results", "--results-db", str(tmp_path / "MISTYPED.db"), *words)
    error = json.loads(out)
    assert code == 1 and error["exit_code"] == 1 and error["kind"] == "no-results-store", out
    assert str(tmp_path / "MISTYPED.db") in error["error"], out
    assert "--results-db" in error["hint"], out
    assert _tree(tmp_path) == before  # no store, no -wal/-shm, no cache folder, no export


def test_a_store_named_in_the_environment_is_named_too(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "results.db"
    code, out = _cli(tmp_path, "--json", "results", "list", env={"ZLUDA_RUNNER_RESULTS_DB": str(missing)})
    error = json.loads(out)
    assert code == 1 and error["kind"] == "no-results-store" and str(missing) in error["error"], out
    assert not missing.parent.exists()


def test_an_empty_file_is_no_store_and_is_left_as_it_is(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    for words in READERS:
        code, out = _cli(tmp_path, "--json", "results", "--results-db", str(empty), *words)
        error = json.loads(out)
        assert code == 1 and error["kind"] == "no-results-store", (words, out)
        assert str(empty) in error["error"], (words, out)
    assert empty.stat().st_size == 0
    assert _tree(tmp_path) == ["empty.db"]


def test_the_default_store_before_anything_is_recorded_reads_as_empty(tmp_path: Path) -> None:
    code, out = _cli(tmp_path, "results", "list")
    assert code == 0 and out == f"no runs recorded in {tmp_path / 'cache' / 'results.db'}\n", out
    code, out = _cli(tmp_path, "--json", "results", "list")
    assert code == 0 and json.loads(out)["runs"] == [], out
    code, out = _cli(tmp_path, "results", "matrix")
    assert code == 0, out
    assert_golden("results_matrix_empty", out)
    for words in (["show", "abcd"], ["delete", "abcd"]):
        code, out = _cli(tmp_path, "--json", "results", *words)
        error = json.loads(out)
        assert code == 1 and error["kind"] == "results-store", out
        assert "abcd" in error["error"] and str(tmp_path / "cache" / "results.db") in error["error"], out
    code, out = _cli(tmp_path, "results", "export", "all.jsonl")
    assert code == 0 and "exported 0 run(s)" in out, out
    assert not (tmp_path / "cache").exists()  # nothing made for it
    assert _tree(tmp_path) == ["all.jsonl"]


def test_the_api_readers_make_no_store(tmp_path: Path) -> None:
    missing = tmp_path / "MISTYPED.db"
    named = zr.Options(cache_dir=tmp_path / "cache", results_db=str(missing))
    calls = (lambda: zr.list_results(named), lambda: zr.get_result("abcd", named),
             lambda: zr.diff_results("abcd", "abce", named), lambda: zr.results_matrix(named),
             lambda: zr.export_results(tmp_path / "out.jsonl", named),
             lambda: zr.delete_result("abcd", named))
    for call in calls:
        with pytest.raises(ResultsStoreError) as raised:
            call()
        assert isinstance(raised.value, NoResultsStoreError)
        assert raised.value.message.startswith(f"no results store at {missing};"), raised.value.message
        hint = raised.value.hint or ""
        assert "Options(results_db=...)" in hint and "--" not in hint, hint
    default = zr.Options(cache_dir=tmp_path / "cache")
    assert zr.list_results(default) == [] and zr.results_matrix(default).cells == []
    settings = Settings(cache_dir=tmp_path / "cache")
    assert summary_for_gpu("gfx1100", settings=settings, db_url=str(missing)) == []
    assert _tree(tmp_path) == []


def test_importing_and_recording_still_make_a_store(tmp_path: Path) -> None:
    imported = tmp_path / "new" / "imported.db"
    code, out = _cli(tmp_path, "results", "--results-db", str(imported), "import", str(_bundle(tmp_path)))
    assert code == 0 and imported.is_file(), out
    code, out = _cli(tmp_path, "results", "--results-db", str(imported), "list", "--json")
    assert code == 0 and json.loads(out) == {"schema": 1, "store": str(imported), "runs": []}, out
    recorded = tmp_path / "rec" / "recorded.db"
    outcome = record_report("torch-ops", reports.torch_ops(3), settings=Settings(cache_dir=tmp_path),
                            db_url=str(recorded), command=["zluda-run", "probe"], host=reports.HOST)
    assert outcome.recorded and recorded.is_file(), outcome.warning
    code, out = _cli(tmp_path, "--json", "results", "--results-db", str(recorded), "list")
    assert code == 0 and len(json.loads(out)["runs"]) == 1, out


def test_a_store_removed_while_a_reader_opens_it_is_not_made_again(tmp_path: Path) -> None:
    """The check that the file is there and the open are two steps: the open itself (SQLite's mode=rw)
    makes no file either."""
    from zluda_runner.results.backends import SQLiteStore

    gone = tmp_path / "gone.db"
    store = SQLiteStore(gone)
    store.may_create = False
    with pytest.raises(sqlite3.OperationalError) as raised:
        store._connect_read_write()  # the step after the check, as a race reaches it
    assert isinstance(store._wrap_error(raised.value), NoResultsStoreError)  # as open() words it
    assert not os.path.lexists(gone) and _tree(tmp_path) == []
