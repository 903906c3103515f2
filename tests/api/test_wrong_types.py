"""The public API given wrong types (found 2026-12-01): a clear TypeError naming the argument, or a
ZludaRunnerError, before anything is opened, never an AttributeError from deep inside.

Before: ``Options(results_db=Path(...))`` failed with "'PosixPath' object has no attribute 'startswith'",
``Options(record="no")`` recorded, ``list_results("x")`` and ``get_result(None)`` raised AttributeError,
``list_results(limit=-1)`` silently left out the first run, ``limit=0`` gave every run,
``kind="nope"`` or ``kind=5`` an empty list, and ``import_results("bundle.jsonl")`` read each letter of
the path as a file ("cannot read /: it is a folder")."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

import zluda_runner as zr
from tests.results import reports
from zluda_runner.core.settings import Settings
from zluda_runner.results.recording import record_report
from zluda_runner.results.schema import ResultsStoreError


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("ZLUDA_RUNNER_RESULTS_DB", raising=False)
    monkeypatch.setenv("ZLUDA_RUNNER_CACHE", str(tmp_path / "cache"))
    url = str(tmp_path / "results.db")
    for i in range(3):
        outcome = record_report("torch-ops", reports.torch_ops(3, {i}, tag=str(i)), settings=Settings(
            results_db=url), command=["zluda-run", "probe"], host=reports.HOST)
        assert outcome.recorded, outcome.warning
    return url


@pytest.mark.parametrize(("keywords", "said"), [
    ({"results_db": 5}, "Options(results_db=...) must be a str (or None), not int 5"),
    ({"results_db": b"x.db"}, "Options(results_db=...) must be a str (or None), not bytes"),
    ({"cache_dir": 5}, "Options(cache_dir=...) must be a str or pathlib.Path (or None), not int 5"),
    ({"zluda_dir": ["a"]}, "Options(zluda_dir=...) must be a str or pathlib.Path (or None), not list"),
    ({"release": 3.9}, "Options(release=...) must be a str"),
    ({"record": "no"}, "Options(record=...) must be True or False, not str 'no'"),
    ({"force": 1}, "Options(force=...) must be True or False, not int 1"),
    ({"defaults": None}, "Options(defaults=...) must be True or False, not NoneType"),
])
def test_options_of_a_wrong_type_are_refused_by_name(keywords: dict[str, object], said: str) -> None:
    with pytest.raises(TypeError) as caught:
        zr.Options(**keywords)  # type: ignore[arg-type]
    assert said in str(caught.value)


def test_options_take_a_path_or_text_for_every_path(store: str, tmp_path: Path) -> None:
    as_path = zr.Options(results_db=Path(store), cache_dir=str(tmp_path / "c"))  # type: ignore[arg-type]
    assert as_path.results_db == store and as_path.cache_dir == tmp_path / "c"
    assert len(zr.list_results(as_path)) == 3
    assert zr.results_location(as_path) == store


@pytest.mark.parametrize("options", ["results.db", {}, 5])
def test_options_that_are_not_an_options_record_are_refused(options: object) -> None:
    wants = r"results_location\(options=\.\.\.\) .*\bzluda_runner\.Options\b"
    with pytest.raises(TypeError, match=wants) as info:
        zr.results_location(options)  # type: ignore[arg-type]
    assert isinstance(info.value, zr.ZludaRunnerError) and info.value.kind == "argument-type"


@pytest.mark.parametrize("call", [
    lambda o: zr.get_result(None, o), lambda o: zr.get_result(5, o), lambda o: zr.delete_result(None, o),
    lambda o: zr.diff_results(b"abcd", "abcd", o),
])
def test_a_run_id_that_is_not_text_is_refused(store: str, call: object) -> None:
    with pytest.raises(TypeError, match=r"_results?\((run_id|run_a)=\.\.\.\) .*\bstr\b"):
        call(zr.Options(results_db=store))  # type: ignore[operator]


@pytest.mark.parametrize(("keywords", "error", "said"), [
    ({"limit": -1}, ResultsStoreError, "limit=-1 is no number of runs"),
    ({"limit": 0}, ResultsStoreError, "limit=0 is no number of runs"),
    ({"limit": "2"}, TypeError, "list_results(limit=...) must be an int"),
    ({"limit": True}, TypeError, "list_results(limit=...) must be an int"),
    ({"kind": "nope"}, ResultsStoreError, "kind='nope' is not a kind of run"),
    ({"kind": 5}, TypeError, "list_results(kind=...) must be a str (or None)"),
    ({"gpu": 1100}, TypeError, "list_results(gpu=...) must be a str (or None)"),
    ({"since": 2026}, TypeError, "list_results(since=...) must be a str or a date"),
])
def test_list_results_refuses_what_it_cannot_mean(store: str, keywords: dict[str, object],
                                                   error: type[Exception], said: str) -> None:
    with pytest.raises(error) as caught:
        zr.list_results(zr.Options(results_db=store), **keywords)  # type: ignore[arg-type]
    assert said in str(caught.value)


def test_list_results_limit_and_a_date(store: str) -> None:
    options = zr.Options(results_db=store)
    everything = zr.list_results(options, limit=None)
    assert zr.list_results(options, limit=2) == everything[-2:]
    assert len(zr.list_results(options, since=datetime.date(2000, 1, 1))) == 3
    assert zr.results_matrix(options, since=datetime.datetime(2000, 1, 1, 12)).runs == 3


def test_one_bundle_is_one_file_not_the_letters_of_its_path(store: str, tmp_path: Path) -> None:
    bundle = tmp_path / "b.jsonl"
    assert zr.export_results(bundle, zr.Options(results_db=store)) == 3
    into = zr.Options(results_db=str(tmp_path / "into.db"))
    assert zr.import_results(str(bundle), into) == (3, 0)  # type: ignore[arg-type]
    assert zr.import_results(bundle, into) == (0, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"import_results\(files=\.\.\.\) .*\bpathlib\.Path\b.* \[None\]\n"):
        zr.import_results([None], into)  # type: ignore[list-item]
    with pytest.raises(TypeError) as none:
        zr.import_results(None, into)  # type: ignore[arg-type]
    assert isinstance(none.value, zr.ZludaRunnerError) and none.value.kind == "argument-type"
    assert str(none.value).startswith("import_results(files=...) ") and "NoneType" in str(none.value)


@pytest.mark.parametrize(("file", "error"), [(None, TypeError), (5, TypeError), ("", ValueError),
                                           (" ", ValueError)])
def test_export_to_no_file_is_refused(store: str, file: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=r"export_results\(file=...\)"):
        zr.export_results(file, zr.Options(results_db=store))  # type: ignore[arg-type]


@pytest.mark.parametrize("command", ["python infer.py", None, 5])
def test_record_result_wants_the_commands_words(store: str, command: object) -> None:
    with pytest.raises(TypeError, match=r"record_result\(command=\.\.\.\) ") as info:
        zr.record_result("torch-ops", reports.torch_ops(1), zr.Options(results_db=store),
                         command=command)  # type: ignore[arg-type]
    assert isinstance(info.value, zr.ZludaRunnerError) and info.value.kind == "argument-type"
    assert f"not {type(command).__name__}" in str(info.value)  # what it was


class _Report:
    def __init__(self, rows: object) -> None:
        self.rows = rows

    def result_rows(self) -> object:
        return self.rows


@pytest.mark.parametrize(("rows", "said"), [
    (None, "_Report.result_rows() gave a NoneType, not a ResultRows"),
    (zr.ResultRows(rows="abc"), "gave rows as a str, not a tuple of ResultRow"),  # type: ignore[arg-type]
    (zr.ResultRows(rows=({"item": "a"},)), "gave a row that is a dict, not a ResultRow"),  # type: ignore[arg-type]
    (zr.ResultRows(rows=(), summary=None), "gave a summary that is a NoneType, not a mapping"),  # type: ignore[arg-type]
])
def test_a_report_whose_rows_are_not_result_rows_is_a_clear_warning(store: str, rows: object,
                                                                    said: str) -> None:
    """Was "results not recorded: AttributeError: 'str' object has no attribute 'item'"."""
    recorded = zr.record_result("probe", _Report(rows), zr.Options(results_db=store))
    assert not recorded.recorded and recorded.warning is not None
    assert recorded.warning.startswith("results not recorded: cannot record this report: "), recorded
    assert said in recorded.warning and "AttributeError" not in recorded.warning
    assert "zluda_runner.ResultRows" in recorded.warning  # the type to give


def test_an_empty_path_is_unset_as_on_the_command_line(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Options(cache_dir="") put the cache (releases, the results store) in the current folder, and
    Options(zluda_dir="") took the current folder for a ZLUDA build: Path("") is ".". The command line
    reads an empty --cache-dir / ZLUDA_RUNNER_CACHE as unset; so does Options now."""
    monkeypatch.setenv("ZLUDA_RUNNER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ZLUDA_RUNNER_RESULTS_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    options = zr.Options(cache_dir="", zluda_dir=" ", manifest="", archive="", results_db="", python="")
    assert (options.cache_dir, options.zluda_dir, options.manifest, options.archive) == (None,) * 4
    assert options.results_db is None and options.python is None
    assert zr.results_location(options) == str(tmp_path / "cache" / "results.db")
