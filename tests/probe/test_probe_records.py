"""The probe's records are frozen and built once: the summary is counted from the cases, the JSON keeps
its keys, order and list shapes (tests and users read ``probe --json``), a variant is made by replace."""

from __future__ import annotations

import dataclasses
import json

import pytest

from zluda_runner.probe.bindings import CallRecord
from zluda_runner.probe.model import CaseResult, LoadResult, ProbeReport, SymbolCoverage, op_case

# the keys of `zluda-run probe --json`, in their order (as before the records were frozen)
KEYS = ["schema", "kind", "target", "load", "cases", "coverage", "summary", "environment", "warnings",
        "duration_s"]


def _report() -> ProbeReport:
    init = CallRecord("cuInit", 0, "CUDA_SUCCESS")
    cases = (CaseResult("init.cuInit", "init", "cuInit", "pass", calls=(init,)),
             CaseResult("mem.alloc", "memory", "cuMemAlloc", "crashed", "worker killed by SIGSEGV",
                        signal="SIGSEGV"),
             CaseResult("mem.free", "memory", "cuMemFree", "skipped", "needs mem.alloc (crashed)"))
    return ProbeReport(target="/z/libcuda.so.1", load=LoadResult("pass"), cases=cases,
                       coverage=SymbolCoverage(3, 2, 2, ("cuMemFree",), ()), warnings=("slow start",))


def test_summary_is_counted_from_the_cases() -> None:
    report = _report()
    assert report.summary == {"pass": 1, "crashed": 1, "skipped": 1}
    assert report.has_problems and report.by_status("crashed") == ["mem.alloc"]
    fixed = dataclasses.replace(report, cases=report.cases[:1])
    assert fixed.summary == {"pass": 1} and not fixed.has_problems
    assert report.summary == {"pass": 1, "crashed": 1, "skipped": 1}  # the original is unchanged


def test_json_keeps_its_keys_order_and_lists() -> None:
    data = json.loads(_report().to_json())
    assert list(data) == KEYS
    assert data["summary"] == {"pass": 1, "crashed": 1, "skipped": 1}
    assert data["cases"][0]["calls"] == [{"function": "cuInit", "result": 0, "result_name": "CUDA_SUCCESS"}]
    assert data["coverage"]["missing"] == ["cuMemFree"] and data["coverage"]["extra"] == []
    assert data["warnings"] == ["slow start"] and data["cases"][1]["signal"] == "SIGSEGV"
    back = ProbeReport.from_json(json.dumps(data))
    assert back == _report() and isinstance(back.cases, tuple) and isinstance(back.cases[0].calls, tuple)


def test_records_are_frozen() -> None:
    report = _report()
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.warnings = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.cases[0].status = "fail"  # type: ignore[misc]


def test_an_unknown_status_from_the_target_is_an_error() -> None:
    case = op_case({"id": "add@float32", "status": "great", "detail": "x"}, "add (float32)", "binary")
    assert case.status == "error" and case.detail.startswith("unreadable result (status 'great')")
    assert op_case({"id": "add@float32", "status": "mismatch"}, "add", "binary").status == "mismatch"
