"""The driver probe against a stand-in libcuda with planted gaps lists exactly those gaps."""

from __future__ import annotations

from pathlib import Path

import pytest

from zluda_runner.core.errors import ProbeError
from zluda_runner.probe.bindings import CallRecord
from zluda_runner.probe.cases import CATALOGUE
from zluda_runner.probe.model import ProbeReport
from zluda_runner.probe.runner import run_probe
from zluda_runner.report.probe_sections import _count_rows, probe_html, probe_sections

EXPECTED = {
    "fail": {"device.uuid", "occupancy.active_blocks", "graph.capture_launch",
             "cublas.snrm2", "cublas.sgemv"},  # the stand-in cuBLAS beside it: NOT_SUPPORTED, as upstream's
    "missing": {"memory.managed", "mempool.default", "mempool.alloc_async"},
    "crashed": {"event.elapsed_time"},
    "timeout": {"context.stream_priority_range"},
}


@pytest.fixture(scope="module")
def report(standin: Path) -> ProbeReport:
    return run_probe(standin, timeout=2.0)


def test_planted_gaps_are_exactly_reported(report: ProbeReport) -> None:
    assert report.load is not None and report.load.status == "pass"
    assert len(report.cases) == len(CATALOGUE)
    for status, ids in EXPECTED.items():
        assert set(report.by_status(status)) == ids, status
    planted = set().union(*EXPECTED.values())
    assert set(report.by_status("pass")) == {c.id for c in CATALOGUE} - planted


def test_failures_carry_code_name_signal_and_calls(report: ProbeReport) -> None:
    uuid = report.case("device.uuid")
    assert uuid is not None and (uuid.result_code, uuid.result_name) == (101, "CUDA_ERROR_INVALID_DEVICE")
    for cid in ("occupancy.active_blocks", "graph.capture_launch"):
        case = report.case(cid)
        assert case is not None and case.result_name == "CUDA_ERROR_NOT_SUPPORTED" and case.result_code == 801
    graph = report.case("graph.capture_launch")
    assert graph is not None and graph.calls[-1].function == "cuStreamBeginCapture_v2"
    crashed = report.case("event.elapsed_time")
    assert crashed is not None and crashed.signal == "SIGSEGV" and "cuEventElapsedTime_v2" in crashed.detail
    # the calls made before the crash are kept, with their results; the fatal one is marked
    assert crashed.calls[-1] == CallRecord("cuEventElapsedTime_v2", None, "crashed")
    assert ("cuEventSynchronize", 0) in [(c.function, c.result) for c in crashed.calls[:-1]]
    hung = report.case("context.stream_priority_range")
    assert hung is not None and "cuCtxGetStreamPriorityRange" in hung.detail
    assert hung.calls[-1] == CallRecord("cuCtxGetStreamPriorityRange", None, "timeout")
    launch = report.case("launch.kernel")
    assert launch is not None and "cuLaunchKernel" in [c.function for c in launch.calls]


def test_catalogue_exercises_150_functions(report: ProbeReport) -> None:
    called = {c.function for case in report.cases for c in case.calls}
    assert len(called) >= 150, len(called)
    # every case that ran (not skipped) recorded what it called
    assert all(case.calls for case in report.cases if case.status != "skipped")


def test_events_fall_back_to_the_default_stream(cc_build) -> None:
    """Stream creation missing and a crash planted in cuEventCreate: the event cases still reach
    cuEventCreate (on the NULL stream) and are reported crashed, not skipped."""
    lib = cc_build(
        ["probe/standin_cuda.c"],
        "libcuda.so.1",
        args=["-DSTANDIN_NO_STREAMS", "-DSTANDIN_CRASH_EVENT_CREATE", "-Wl,-soname,libcuda.so.1"],
    )
    ids = ["stream.create_destroy", "event.record_sync", "memory.async_copy", "stream.sync_query"]
    rep = run_probe(lib, timeout=5.0, case_ids=ids)
    got = {c.id: c for c in rep.cases}
    assert got["stream.create_destroy"].status == "missing"
    event = got["event.record_sync"]
    assert event.status == "crashed" and event.calls[-1] == CallRecord("cuEventCreate", None, "crashed")
    copy = got["memory.async_copy"]
    assert copy.status == "pass" and "default (NULL) stream" in copy.detail
    assert got["stream.sync_query"].status == "skipped"  # it is about created streams


def test_symbol_coverage_counts_exports(report: ProbeReport, standin: Path) -> None:
    """Coverage against an independent count: readelf's list of the library's defined dynamic
    symbols, intersected with the packaged reference list of driver entry points."""
    import shutil
    import subprocess

    from tests.conftest import require
    from zluda_runner.data.driver_api import driver_api

    require(shutil.which("readelf") is not None, "readelf (binutils) not installed")
    out = subprocess.run(["readelf", "--dyn-syms", "-W", str(standin)], capture_output=True, text=True,
                         check=True).stdout
    exported = {line.split()[7].split("@")[0] for line in out.splitlines()
                if len(line.split()) >= 8 and line.split()[3] == "FUNC" and line.split()[6] != "UND"}
    reference = set(driver_api().symbols)
    cov = report.coverage
    assert cov is not None and cov.error is None
    assert cov.reference == len(reference) and cov.exported == len(exported)
    assert cov.present == len(exported & reference)
    assert set(cov.missing) == reference - exported
    assert set(cov.extra) == exported - reference


def test_report_round_trips_and_renders(report: ProbeReport) -> None:
    again = ProbeReport.from_json(report.to_json())
    assert again.summary == report.summary and again.cases[0].calls == report.cases[0].calls
    problems = {row["id"]: row for row in probe_sections(report)[0].tables[1].rows}
    assert [problems["event.elapsed_time"][k] for k in ("area", "status", "failing_call")] == [
        "event", "crashed", "cuEventElapsedTime_v2 -> crashed"]
    assert [problems["device.uuid"][k] for k in ("area", "status", "failing_call")] == [
        "device", "fail", "cuDeviceGetUuid_v2 -> CUDA_ERROR_INVALID_DEVICE"]
    page = probe_html(report)
    assert page.startswith("<!DOCTYPE html>") and "<script>" in page and "<style>" in page
    # coloured by status, one filter box per status, nothing fetched from elsewhere
    assert '<tr class="bad" data-status="crashed">' in page
    assert '<tr class="warn" data-status="timeout">' in page
    assert '<tr class="ok" data-status="pass">' in page
    # per area: how many passed, failed, were missing
    assert "<h3>by area</h3>" in page and "<h3>problems (fail / missing / crashed / timeout)</h3>" in page
    areas = {row["area"]: row for row in _count_rows(report, "area")}
    assert areas["mempool"]["missing"] == 2 and areas["device"]["fail"] == 1 and areas["device"]["pass"] > 5
    assert '<input type="checkbox" value="missing" checked>' in page and 'type="search"' in page
    assert "http" not in page.replace('lang="en"', "") and " src=" not in page


def test_html_escapes_text_from_the_library() -> None:
    from zluda_runner.report.html import table_html
    from zluda_runner.report.table import Column, Table

    row = {"detail": "<img src=x onerror=1>", "status": "fail"}
    page = table_html(Table("t", [Column("detail", "detail")], [row]))
    assert "<img" not in page and "&lt;img src=x onerror=1&gt;" in page


def test_selected_cases_only(standin: Path) -> None:
    rep = run_probe(standin, timeout=2.0, case_ids=["init.cuInit", "error.name"])
    assert [c.status for c in rep.cases] == ["pass", "pass"]


def test_not_a_library_is_a_load_failure(tmp_path: Path) -> None:
    fake = tmp_path / "libcuda.so.1"
    fake.write_text("not an ELF file")
    rep = run_probe(fake, timeout=2.0, case_ids=["init.cuInit"])
    assert rep.load is not None and rep.load.status == "fail" and str(fake) in rep.load.detail  # dlerror's
    assert rep.cases[0].status == "skipped"
    assert rep.coverage is not None and rep.coverage.error


def test_library_crashing_on_load(cc_build) -> None:
    lib = cc_build(["probe/crash_on_load.c"], "libcuda.so.1")
    rep = run_probe(lib, timeout=2.0, case_ids=["init.cuInit"])
    assert rep.load is not None and rep.load.status == "crashed" and "SIGSEGV" in rep.load.detail
    assert rep.cases[0].status == "skipped"


def test_no_library_and_unknown_case(tmp_path: Path, standin: Path) -> None:
    with pytest.raises(ProbeError) as err:
        run_probe(tmp_path / "nope.so")
    assert err.value.hint
    with pytest.raises(ProbeError):
        run_probe(standin, case_ids=["no.such.case"])
