"""One invocation record: what every recorded run stores as its command is what the user asked, as the
command line parsed it (global and command options, the workload's words; an API call's own arguments),
with credentials masked (issue 27, point 5)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.core.redact import redact_words
from zluda_runner.results import recording
from zluda_runner.results.backends import SQLiteStore
from zluda_runner.results.fingerprint import Scrubber


@pytest.fixture()
def any_url_is_this_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Whatever ``--results-db`` names (a PostgreSQL URL with its password), runs go to one SQLite file."""
    db = tmp_path / "kept.db"
    monkeypatch.setattr(recording, "make_store", lambda url: SQLiteStore(db))
    return db


def _commands(db: Path) -> list[list[str]]:
    with SQLiteStore(db).open() as store:
        return [run.command for run in store.list_runs()]


def test_a_global_option_before_probe_is_recorded_with_its_password_masked(
        standin: Path, any_url_is_this_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgresql://u:PASSWORD@host/db"
    args = ["--results-db", url, "probe", "--libcuda", str(standin), "--case", "init.cuInit"]
    monkeypatch.setattr(sys, "argv", ["zluda-run", *args])  # 7859508 recorded ["probe", *sys.argv[2:]]
    result = CliRunner().invoke(main_group, args)
    assert result.exit_code in (0, 3), result.output
    [command] = _commands(any_url_is_this_store)
    with SQLiteStore(any_url_is_this_store).open() as store:  # nowhere in the run: release, target, items
        runs = store.get_runs([run.run_id for run in store.list_runs()])
    assert "PASSWORD" not in json.dumps([run.to_dict() for run in runs])
    assert command[1] == "--cache-dir"  # the test's own, from its variable (the user's name scrubbed)
    assert command[:1] + command[3:] == ["zluda-run", "--results-db", "postgresql://u:***@host/db", "probe",
                       "--libcuda", Scrubber().text(str(standin)), "--case", "init.cuInit"]


def test_a_global_option_from_its_environment_is_recorded_as_parsed(
        standin: Path, any_url_is_this_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZLUDA_RUNNER_RESULTS_DB", "postgres://me:s3cret@db.example/runs?sslmode=require")
    result = CliRunner().invoke(main_group, ["probe", "--case", "init.cuInit", "--libcuda", str(standin)])
    assert result.exit_code in (0, 3), result.output
    [command] = _commands(any_url_is_this_store)
    assert "s3cret" not in json.dumps(command)
    assert command[:1] + command[3:5] == ["zluda-run", "--results-db", "postgres://me:***@db.example/runs?sslmode=require"]


def test_ab_records_its_options_and_the_scripts_words(any_url_is_this_store: Path, tmp_path: Path) -> None:
    script = tmp_path / "bench.py"
    script.write_text("print('hi')\n", encoding="utf-8")
    side = f"{sys.executable} {script}"
    shown = Scrubber().text(side)
    args = ["ab", "--runs", "1", "--a-cmd", f"{side} --token=abc", "--b-cmd", side, "--", "--steps", "2"]
    result = CliRunner().invoke(main_group, args)
    assert result.exit_code in (0, 3), result.output  # 7859508 recorded ["ab", "--steps", "2"]
    [command] = _commands(any_url_is_this_store)
    assert command[:1] + command[3:] == ["zluda-run", "ab", "--runs", "1", "--a-cmd", f"{shown} --token=***",
                                         "--b-cmd", shown, "--", "--steps", "2"]


def test_an_api_call_records_its_own_arguments(any_url_is_this_store: Path, tmp_path: Path) -> None:
    from zluda_runner import Options, run_ab

    script = tmp_path / "bench.py"
    script.write_text("print('hi')\n", encoding="utf-8")
    options = Options(results_db="postgresql://u:PASSWORD@host/db", cache_dir=tmp_path / "cache")
    run_ab([str(script), "--steps", "2"], options, runs=1, a_command=f"{sys.executable} {script}",
           b_command=f"{sys.executable} {script}")
    [command] = _commands(any_url_is_this_store)
    assert "PASSWORD" not in json.dumps(command)
    assert command[0] == "zluda_runner.run_ab" and Scrubber().text(f"script={script} --steps 2") in command
    assert "options.results_db=postgresql://u:***@host/db" in command and "runs=1" in command


@pytest.mark.parametrize(("words", "kept"), [
    (["--results-db", "postgresql://u:pw@h/d"], ["--results-db", "postgresql://u:***@h/d"]),
    (["--results-db=postgresql://u:pw@h/d"], ["--results-db=postgresql://u:***@h/d"]),
    (["--results-db", "/data/results.db"], ["--results-db", "/data/results.db"]),  # a path is no secret
    (["HF_TOKEN=abc", "API_KEY=k", "CUDA_VISIBLE_DEVICES=0"], ["HF_TOKEN=***", "API_KEY=***",
                                                               "CUDA_VISIBLE_DEVICES=0"]),
    (["--token", "abc", "--api-key=xyz", "--steps", "3"],
     ["--token", "***", "--api-key=***", "--steps", "3"]),
    (["GITHUB_TOKEN=t python x.py"], ["GITHUB_TOKEN=*** python x.py"]),
    (["https://user:pw@example.com/x"], ["https://user:***@example.com/x"]),
])
def test_credentials_in_the_words_are_masked(words: list[str], kept: list[str]) -> None:
    assert redact_words(words) == kept


def test_a_command_given_by_the_caller_is_masked_too(tmp_path: Path) -> None:
    from tests.results import reports
    from zluda_runner.core.settings import Settings

    out = recording.record_report("torch-ops", reports.torch_ops(1), settings=Settings(cache_dir=tmp_path),
                                  command=["x", "--results-db", "postgresql://a:b@c/d"],
                                  db_url=str(tmp_path / "r.db"))
    assert out.recorded
    assert _commands(tmp_path / "r.db") == [["x", "--results-db", "postgresql://a:***@c/d"]]


def test_a_probe_made_with_zluda_dir_records_that_release(standin: Path, any_url_is_this_store: Path,
                                                          tmp_path: Path) -> None:
    args = ["--zluda-dir", str(tmp_path), "probe", "--libcuda", str(standin), "--case", "init.cuInit"]
    result = CliRunner().invoke(main_group, args)
    assert result.exit_code in (0, 3), result.output
    with SQLiteStore(any_url_is_this_store).open() as store:
        [run] = store.list_runs()
    assert run.release_id == "zluda-dir"  # 7859508: "none", filed with the doctor's runs


def test_a_torch_probe_that_could_not_run_is_recorded_as_not_run(tmp_path: Path) -> None:
    from zluda_runner.core.settings import Settings
    from zluda_runner.probe.model import KIND_TORCH, LoadResult, ProbeReport

    report = ProbeReport(kind=KIND_TORCH, load=LoadResult("unavailable", "CUDA is not available"))
    assert report.could_not_run
    out = recording.record_report("torch-ops", report, settings=Settings(cache_dir=tmp_path), command=["x"],
                                  db_url=str(tmp_path / "r.db"))
    with SQLiteStore(tmp_path / "r.db").open() as store:
        run = store.get_runs([out.run_id or ""])[0]
    assert run.summary["verdict"] == "not run" and run.summary["items"] == 1  # 7859508: 0 items, no verdict
    assert [(i.item, i.status, i.ok) for i in run.items] == [("load", "not run", None)]
