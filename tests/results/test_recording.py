"""Runs land in the store (SQLite and a real PostgreSQL), item by item; a broken store only warns."""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require
from tests.results import reports
from zluda_runner.core.settings import Settings
from zluda_runner.probe.model import ProbeReport
from zluda_runner.probe.runner import run_probe
from zluda_runner.probe.torch_probe import run_torch_probe
from zluda_runner.results.backends import SQLiteStore, make_store
from zluda_runner.results.queries import diff_runs
from zluda_runner.results.recording import record_report
from zluda_runner.results.schema import MIGRATIONS, SCHEMA_VERSION, ResultsStoreError, RunRecord

NEUTRAL = ("pass", "skipped", "unavailable")


@pytest.fixture(scope="module")
def probe_gaps(standin: Path) -> ProbeReport:
    return run_probe(standin, timeout=2.0)


@pytest.fixture(scope="module")
def probe_ok(standin_ok: Path) -> ProbeReport:
    return run_probe(standin_ok, timeout=2.0)


@pytest.fixture(scope="module")
def torch_cpu() -> ProbeReport:
    require(importlib.util.find_spec("torch") is not None, "torch not installed (pip install torch==2.13.0)")
    return run_torch_probe(sys.executable, os.environ, device="cpu", timeout=300)


def _record(kind: str, report: object, url: str, tmp_path: Path, **kw: Any) -> RunRecord:
    out = record_report(
        kind, report, settings=Settings(cache_dir=tmp_path), command=["zluda-run", kind], db_url=url, **kw
    )
    assert out.recorded and out.warning is None, out.warning
    with make_store(url).open() as store:
        return store.get_run(out.run_id or "")


def test_probe_against_standin_lands_case_by_case(
    probe_gaps: ProbeReport, store_url: str, tmp_path: Path
) -> None:
    run = _record("probe", probe_gaps, store_url, tmp_path, release=reports.FORK, host=reports.HOST)
    assert [i.item for i in run.items] == [c.id for c in probe_gaps.cases]
    assert [i.status for i in run.items] == [c.status for c in probe_gaps.cases]
    failing = {c.id for c in probe_gaps.cases if c.status not in NEUTRAL}
    assert failing, "the stand-in plants gaps"
    assert {i.item for i in run.items if i.ok is False} == failing
    assert run.summary["failed"] == len(failing)
    assert run.host["gfx"] == "gfx1100" and run.release == reports.FORK
    named = next(c for c in probe_gaps.cases if c.result_name)
    assert named.result_name and named.result_name in next(i.detail for i in run.items if i.item == named.id)


def test_torch_ops_on_cpu_land_with_errors(torch_cpu: ProbeReport, store_url: str, tmp_path: Path) -> None:
    run = _record("torch-ops", torch_cpu, store_url, tmp_path, target={"torch_version": "2.13.0+cpu"})
    assert len(run.items) == len(torch_cpu.cases) > 5
    assert run.summary["passed"] == torch_cpu.summary.get("pass")
    case = next(c for c in torch_cpu.cases if c.max_abs_err is not None)
    item = next(i for i in run.items if i.item == case.id)
    assert item.numbers["max_abs_err"] == pytest.approx(case.max_abs_err)
    assert run.torch_build == "2.13.0+cpu"


def test_trace_ab_verify_and_doctor_land(store_url: str, tmp_path: Path) -> None:
    trace = _record("trace", reports.trace_report(), store_url, tmp_path)
    assert {i.item: i.numbers["calls"] for i in trace.items} == {
        "cuInit": 1,
        "cuGetProcAddress_v2": 420,
        "cuMemAlloc_v2": 12,
    }
    assert [i.item for i in trace.items if i.ok is False] == ["cuGetProcAddress_v2"]

    ab = _record("ab", reports.ab_report(1.3), store_url, tmp_path)
    assert ab.summary["verdict"] == "agree, B faster"
    timing = next(i for i in ab.items if i.item == "timing:generate")
    assert timing.numbers["median_a_s"] == pytest.approx(1.3) and timing.ok is None

    home = Path.home()
    verify = _record("verify-load", reports.verify_result(home), store_url, tmp_path)
    assert [(i.item, i.status, i.ok) for i in verify.items] == [
        ("libcuda.so.1", "taken", True),
        ("libcublas.so.13", "not-taken", False),
    ]
    assert str(home) not in verify.items[1].detail and verify.items[1].detail.startswith("~/")

    doctor = _record("doctor", reports.doctor_report(), store_url, tmp_path)
    assert [(i.item, i.ok) for i in doctor.items] == [("gpu", True), ("rocblas", None), ("kfd", False)]
    assert doctor.host["gfx"] == "gfx1100" and doctor.host["gpu_name"] == "Radeon RX 7900 XTX"
    assert doctor.host["hip_version"].startswith("6.2")


def test_same_run_recorded_twice_is_stored_once(store_url: str, tmp_path: Path) -> None:
    report = reports.torch_ops(10, {3})
    first = record_report(
        "torch-ops",
        report,
        settings=Settings(cache_dir=tmp_path),
        command=[],
        db_url=store_url,
        started_at="2025-01-01T00:00:00.000000Z",
    )
    again = record_report(
        "torch-ops",
        report,
        settings=Settings(cache_dir=tmp_path),
        command=[],
        db_url=store_url,
        started_at="2025-01-01T00:00:00.000000Z",
    )
    assert first.run_id == again.run_id and not first.duplicate and again.duplicate
    with make_store(store_url).open() as store:
        assert len(store.list_runs()) == 1


def test_diff_finds_the_planted_regression_between_two_standins(
    probe_ok: ProbeReport, probe_gaps: ProbeReport, store_url: str, tmp_path: Path
) -> None:
    before = _record("probe", probe_ok, store_url, tmp_path)
    after = _record("probe", probe_gaps, store_url, tmp_path)
    diff = diff_runs(before, after)
    good = {c.id for c in probe_ok.cases if c.status == "pass"}
    planted = {c.id for c in probe_gaps.cases if c.status not in NEUTRAL} & good
    assert planted
    # cases the gaps build passes and the full build does not (init.export_table: by design of the
    # stand-ins) are "fixed"; nothing else may show up there
    bad_before = {c.id for c in probe_ok.cases if c.status not in NEUTRAL}
    fixed = {c.id for c in probe_gaps.cases if c.status == "pass"} & bad_before
    assert {c.item for c in diff.newly_failing} == planted
    assert {c.item for c in diff.fixed} == fixed and diff.regressed
    back = diff_runs(after, before)
    assert {c.item for c in back.fixed} == planted and {c.item for c in back.newly_failing} == fixed


def test_diff_reports_ab_speed_changes(store_url: str, tmp_path: Path) -> None:
    fast = _record("ab", reports.ab_report(1.0), store_url, tmp_path)
    slow = _record("ab", reports.ab_report(1.5), store_url, tmp_path)
    diff = diff_runs(fast, slow)
    assert [(s.item, s.side) for s in diff.speed] == [("timing:generate", "A")]
    assert diff.speed[0].change == pytest.approx(0.5)
    assert diff_runs(fast, fast).speed == []


def test_corrupt_sqlite_store_gives_a_warning_not_an_exception(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    db.write_bytes(b"this is not a database at all, just junk " * 100)
    out = record_report("torch-ops", reports.torch_ops(3), settings=Settings(cache_dir=tmp_path), command=[])
    assert not out.recorded and out.warning is not None
    assert "unusable" in out.warning and "mv " in out.warning
    assert db.read_bytes().startswith(b"this is not")  # left alone for the user to look at


def test_unreachable_postgres_and_bad_report_give_warnings(tmp_path: Path) -> None:
    out = record_report(
        "probe",
        reports.torch_ops(1),
        settings=Settings(cache_dir=tmp_path),
        command=[],
        db_url=f"postgresql://nobody@/none?host={tmp_path}/nosock",
    )
    assert (out.recorded, out.error_kind) == (False, "store-unreachable"), out
    bad = record_report("probe", object(), settings=Settings(cache_dir=tmp_path), command=[])
    assert not bad.recorded and bad.warning and "result_rows" in bad.warning
    odd = record_report("benchmark", reports.torch_ops(1), settings=Settings(cache_dir=tmp_path), command=[])
    assert not odd.recorded and odd.warning and "'benchmark'" in odd.warning


def test_migrations_bring_an_old_store_up_to_date(store_url: str) -> None:
    store = make_store(store_url)
    store._conn = store._connect()
    with store._tx(write=True) as cur:  # a store made by a version that knew migration 1 only
        store._exec(
            cur, "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        for statement in MIGRATIONS[0]:
            store._exec(cur, statement)
        store._exec(cur, "INSERT INTO schema_version (version, applied_at) VALUES (1, 'then')")
    assert store.schema_version() == 1
    assert store.migrate() == SCHEMA_VERSION
    assert store.schema_version() == SCHEMA_VERSION == 3
    with store._tx(write=True) as cur:
        store._exec(cur, "INSERT INTO schema_version (version, applied_at) VALUES (99, 'future')")
    store.close()
    with pytest.raises(ResultsStoreError) as caught:
        make_store(store_url).open()
    assert "99" in caught.value.message and f"({SCHEMA_VERSION})" in caught.value.message  # its schema, ours


def test_sqlite_store_is_in_wal_mode_in_the_cache(tmp_path: Path) -> None:
    out = record_report("torch-ops", reports.torch_ops(2), settings=Settings(cache_dir=tmp_path), command=[])
    assert out.recorded and out.location == str(tmp_path / "results.db")
    with sqlite3.connect(tmp_path / "results.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert isinstance(make_store(str(tmp_path / "results.db")), SQLiteStore)
