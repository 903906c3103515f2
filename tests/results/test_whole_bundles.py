"""A bundle is imported whole or not at all: its header's run count is checked (hunt of 2026-12-01).

On e29888c a bundle cut short at a line's end (``head -n``, a copy or download that stopped between
two runs) imported the runs it still held and said nothing; the header's ``"runs"`` was never read.
These tests fail there.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings
from zluda_runner.results import bundle as bundle_mod
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import export_bundle, import_bundles
from zluda_runner.results.recording import record_report
from zluda_runner.results.schema import ResultsStoreError


def _exported(tmp_path: Path, runs: int = 3) -> Path:
    url = str(tmp_path / "src" / "results.db")
    for n in range(runs):
        out = record_report("torch-ops", reports.torch_ops(5, {n}), settings=Settings(cache_dir=tmp_path),
                            db_url=url, command=["zluda-run", "probe", str(n)], host=reports.HOST,
                            started_at=f"2025-06-0{n + 1}T10:00:00.000000Z")
        assert out.recorded, out.warning
    bundle = tmp_path / "all.jsonl"
    with make_store(url).open() as store:
        assert export_bundle(store, bundle) == runs
    return bundle


def _cli(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path / "c"), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


def test_a_bundle_cut_short_at_a_line_end_is_refused_and_stores_nothing(tmp_path: Path) -> None:
    lines = _exported(tmp_path).read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:2]), encoding="utf-8")  # the header and one of the three runs
    target = str(tmp_path / "dst" / "results.db")
    code, out = _cli(tmp_path, "--json", "--results-db", target, "results", "import", str(cut))
    assert code == 1, out
    error = json.loads(out)
    assert error["kind"] == "results-store" and str(cut) in error["error"] and error["hint"], error
    assert re.search(r"\b1\b.*\b3\b", error["error"]), error  # 1 run of the 3 the header says
    with make_store(target).open() as store:
        assert len(store.list_runs()) == 0


def test_a_bundle_with_runs_added_after_export_is_refused(tmp_path: Path) -> None:
    bundle = _exported(tmp_path, runs=2)
    lines = bundle.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    header["runs"] = 1
    grown = tmp_path / "grown.jsonl"
    grown.write_text(json.dumps(header) + "\n" + "".join(lines[1:]), encoding="utf-8")
    with make_store(str(tmp_path / "dst" / "results.db")).open() as store:
        with pytest.raises(ResultsStoreError) as caught:
            import_bundles(store, [grown])
        assert caught.value.kind == "results-store" and f"{grown}, line 3: " in caught.value.message
        assert "(1)" in caught.value.message  # the count the header says
        assert len(store.list_runs()) == 0


@pytest.mark.parametrize("runs", ["3", -1, True, 2.5])
def test_a_header_whose_run_count_is_not_a_count_is_refused(tmp_path: Path, runs: object) -> None:
    lines = _exported(tmp_path, runs=1).read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0]) | {"runs": runs}
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps(header) + "\n" + "".join(lines[1:]), encoding="utf-8")
    with (make_store(str(tmp_path / "dst" / "results.db")).open() as store,
          pytest.raises(ResultsStoreError) as caught):
        import_bundles(store, [odd])
    assert f"{odd}, line 1: " in caught.value.message and repr(str(runs)) in caught.value.message


def test_a_whole_bundle_and_one_without_a_count_still_import(tmp_path: Path) -> None:
    bundle = _exported(tmp_path)
    lines = bundle.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    del header["runs"]  # a hand-made bundle may say nothing of its size
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps(header) + "\n" + "".join(lines[1:]), encoding="utf-8")
    with make_store(str(tmp_path / "dst" / "results.db")).open() as store:
        assert import_bundles(store, [bundle]) == (3, 0)
        assert import_bundles(store, [bare, bundle]) == (0, 6)


def test_an_export_that_cannot_read_back_a_listed_run_writes_nothing(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The header's count stays true: a run deleted between listing and reading fails the export."""
    bundle = _exported(tmp_path)
    before = bundle.read_bytes()
    with make_store(str(tmp_path / "src" / "results.db")).open() as store:
        real = store.get_runs
        monkeypatch.setattr(store, "get_runs", lambda ids, **kw: real(ids, **kw)[1:])
        with pytest.raises(ResultsStoreError) as caught:
            export_bundle(store, bundle)
        assert caught.value.kind == "results-store" and caught.value.message.startswith("1 ")
        assert str(bundle) in caught.value.message  # how many, and the file not written
    assert bundle.read_bytes() == before  # the earlier export is still there, whole
    assert [p.name for p in tmp_path.glob("*all.jsonl*")] == ["all.jsonl"]  # no temporary file left


def test_a_bundle_a_windows_editor_saved_with_a_byte_order_mark_imports(tmp_path: Path) -> None:
    """On e29888c: "line 1: Unexpected UTF-8 BOM (decode using utf-8-sig)"."""
    bundle = _exported(tmp_path, runs=2)
    saved = tmp_path / "saved.jsonl"
    saved.write_bytes(b"\xef\xbb\xbf" + bundle.read_bytes().replace(b"\n", b"\r\n"))  # Notepad's way
    with make_store(str(tmp_path / "dst" / "results.db")).open() as store:
        assert import_bundles(store, [saved]) == (2, 0)


def test_what_was_checked_is_what_is_stored_when_the_name_gets_another_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On e29888c the bundle was opened twice, by name: a sync tool renaming another file over it
    between the check and the storing had that file's runs stored, up to its damaged line."""
    good = _exported(tmp_path, runs=2).rename(tmp_path / "good.jsonl")
    (tmp_path / "src").rename(tmp_path / "src-good")
    other = _exported(tmp_path, runs=3).rename(tmp_path / "other.jsonl")
    other_lines = other.read_text(encoding="utf-8").splitlines(keepends=True)
    other.write_text("".join(other_lines[:2]) + "{damaged\n", encoding="utf-8")  # one run, then damage
    real, seen = bundle_mod.check_run, []

    def checking(data: object, schema: int | None = None):  # type: ignore[no-untyped-def]
        seen.append(1)
        if len(seen) == 2:  # the check has read the last run: the name now gets the other file
            os.replace(other, good)
        return real(data, schema)

    monkeypatch.setattr(bundle_mod, "check_run", checking)
    monkeypatch.setattr(bundle_mod, "_BATCH", 1)
    with make_store(str(tmp_path / "dst" / "results.db")).open() as store:
        assert import_bundles(store, [good]) == (2, 0)
        assert [r.command[-1] for r in store.list_runs()] == ["0", "1"]


def test_a_bundle_that_grows_as_it_is_read_is_bounded(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The size is checked when the file is opened, and what is read after is counted too (a file
    appended to meanwhile, or one that says its size is 0, as /proc files do)."""
    bundle = _exported(tmp_path, runs=3)
    size = bundle.stat().st_size
    real_fstat = os.fstat
    monkeypatch.setattr(bundle_mod.os, "fstat", lambda fd: os.stat_result((*real_fstat(fd)[:6], 0, 0, 0, 0)))
    monkeypatch.setattr(bundle_mod, "MAX_BUNDLE_BYTES", size - 10)
    with make_store(str(tmp_path / "dst" / "results.db")).open() as store:
        with pytest.raises(ResultsStoreError) as caught:
            import_bundles(store, [bundle])
        assert f"{bundle}, line 4: " in caught.value.message and str(size - 10) in caught.value.message
        assert len(store.list_runs()) == 0
