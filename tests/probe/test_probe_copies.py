"""The strided copy cases (probe/cases/copies.py): one table, each row a driver call that copies rows
host -> device -> host. Against the stand-in driver they pass; against one that lays rows out wrongly
or copies too few slices, exactly the rows whose copy is wrong fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from zluda_runner.probe.cases import CASES_BY_ID
from zluda_runner.probe.cases.copies import COPIES
from zluda_runner.probe.model import ProbeReport
from zluda_runner.probe.runner import run_probe

COPY_IDS = [f"copy.{c.id}" for c in COPIES]
ALL_IDS = ["memory.alloc_free", "memory.copy_roundtrip", "memory.pitched", *COPY_IDS,
           "array.create_2d", "array.copy_host"]


def _statuses(report: ProbeReport) -> dict[str, str]:
    return {c.id: c.status for c in report.cases}


def test_each_row_of_the_table_is_a_case_with_its_needs() -> None:
    assert len(set(COPY_IDS)) == len(COPIES) == 5
    for copy in COPIES:
        registered = CASES_BY_ID[f"copy.{copy.id}"]
        assert (registered.area, registered.title, registered.needs) == ("copy", copy.title, copy.needs)
        assert all(need in CASES_BY_ID for need in copy.needs)


def test_the_copies_pass_and_call_their_function_both_ways(standin: Path) -> None:
    report = run_probe(standin, timeout=10.0, case_ids=ALL_IDS)
    assert set(_statuses(report).values()) == {"pass"}, _statuses(report)
    for copy in COPIES:
        case = report.case(f"copy.{copy.id}")
        assert case is not None
        called = [c.function for c in case.calls]
        assert [f.split("_v2")[0] for f in called].count(copy.function) == 2, called  # up and down
        assert ("cuStreamSynchronize" in called) == copy.on_stream
        assert ("cuMemAllocPitch_v2" in called) == copy.pitched
        assert all(c.result == 0 for c in case.calls)


@pytest.mark.parametrize(("fault", "failing"), [
    ("STANDIN_COPY_PACKED", {f"copy.{c.id}" for c in COPIES if c.pitched}),
    ("STANDIN_COPY_ONE_SLICE", {f"copy.{c.id}" for c in COPIES if c.slices > 1}),
])
def test_a_wrong_copy_fails_exactly_its_cases(cc_build, fault: str, failing: set[str]) -> None:
    """Packed rows in a pitched buffer come back right (the fault is the same both ways): only the
    device layout shows it. One slice of a 3D copy leaves the others unwritten."""
    lib = cc_build(["probe/standin_cuda.c"], "libcuda.so.1", args=[f"-D{fault}", "-Wl,-soname,libcuda.so.1"])
    report = run_probe(lib, timeout=10.0, case_ids=ALL_IDS)
    got = _statuses(report)
    assert {cid for cid, status in got.items() if status != "pass"} == failing, got
    assert {got[cid] for cid in failing} == {"fail"}
    assert all(report.case(cid).result_code is None for cid in failing)  # the calls worked, the data did not
