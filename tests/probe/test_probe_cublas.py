"""The driver probe's cuBLAS cases, against stand-in cuBLAS libraries beside the stand-in driver.

The stand-ins (tests/fixtures/probe/standin_cublas.c) compute nrm2 / gemv, compute them wrong, or answer
CUBLAS_STATUS_NOT_SUPPORTED as upstream ZLUDA's cuBLAS does (vosen/ZLUDA zluda_blas/src/lib.rs at
8a7931be, cited in the C file). The cuBLAS is the one beside the driver, as a release ships them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import beside, standin_cublas
from zluda_runner.data.cublas_api import CUBLAS_STATUS_NOT_SUPPORTED
from zluda_runner.probe.bindings import CallRecord
from zluda_runner.probe.blas import cublas_beside
from zluda_runner.probe.cases import CATALOGUE
from zluda_runner.probe.model import ProbeReport
from zluda_runner.probe.runner import run_probe
from zluda_runner.report.probe_sections import probe_sections

IDS = ["context.primary", "memory.alloc_free", "memory.copy_roundtrip", "cublas.create", "cublas.snrm2",
       "cublas.sgemv"]
CUBLAS = ("cublas.create", "cublas.snrm2", "cublas.sgemv")


@pytest.fixture(scope="module")
def driver(cc_build) -> Path:  # type: ignore[no-untyped-def]
    return cc_build(["probe/standin_cuda.c"], "libcuda.so.1",
                    args=["-DSTANDIN_NO_GAPS", "-Wl,-soname,libcuda.so.1"])


def _probe(folder: Path, driver: Path, cublas: Path | None, name: str = "libcublas.so.12") -> ProbeReport:
    files = [(driver, "libcuda.so.1"), *([(cublas, name)] if cublas else [])]
    return run_probe(beside(folder, *files), timeout=20.0, case_ids=IDS)


def _cases(report: ProbeReport) -> dict[str, tuple[str, int | None, str | None]]:
    return {c.id: (c.status, c.result_code, c.result_name) for c in report.cases if c.area == "cublas"}


def test_the_cases_are_in_the_catalogue_after_what_they_need() -> None:
    order = [c.id for c in CATALOGUE]
    assert order[-3:] == list(CUBLAS)
    for case in CATALOGUE[-3:]:
        assert all(order.index(n) < order.index(case.id) for n in case.needs), case


def test_upstream_zludas_cublas_fails_nrm2_and_gemv_naming_not_supported(driver: Path, cc_build,  # type: ignore[no-untyped-def]
                                                                         tmp_path: Path) -> None:
    report = _probe(tmp_path, driver, standin_cublas(cc_build, "UPSTREAM"))
    not_supported = ("fail", CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED")
    assert _cases(report) == {"cublas.create": ("pass", None, None), "cublas.snrm2": not_supported,
                              "cublas.sgemv": not_supported}
    create = report.case("cublas.create")
    assert create is not None and create.detail == str(tmp_path / "libcublas.so.12")  # which cuBLAS ran
    nrm2 = report.case("cublas.snrm2")
    assert nrm2 is not None
    # the driver's calls and cuBLAS's in the order made, each result named by its own API; the handle is
    # destroyed after the failure
    assert [c.function for c in nrm2.calls][-3:] == ["cublasCreate_v2", "cublasSnrm2_v2", "cublasDestroy_v2"]
    assert CallRecord("cublasSnrm2_v2", 15, "CUBLAS_STATUS_NOT_SUPPORTED") in nrm2.calls
    assert CallRecord("cuMemcpyHtoD_v2", 0, "CUDA_SUCCESS") in nrm2.calls
    assert nrm2.calls[-1] == CallRecord("cublasDestroy_v2", 0, "CUBLAS_STATUS_SUCCESS")
    # the report's failing call is the cuBLAS one
    problems = next(t for t in probe_sections(report)[0].tables if t.title.startswith("problems"))
    failing = {row["id"]: row["failing_call"] for row in problems.rows}
    assert failing["cublas.sgemv"] == "cublasSgemv_v2 -> CUBLAS_STATUS_NOT_SUPPORTED"
    assert report.has_problems


def test_a_cublas_that_computes_passes(driver: Path, cc_build, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    report = _probe(tmp_path, driver, standin_cublas(cc_build, ""))
    assert {c.id: c.status for c in report.cases} == dict.fromkeys(IDS, "pass")
    assert not report.has_problems


def test_a_wrong_value_fails_with_the_difference(driver: Path, cc_build, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    report = _probe(tmp_path, driver, standin_cublas(cc_build, "WRONG"))
    nrm2, gemv = report.case("cublas.snrm2"), report.case("cublas.sgemv")
    assert nrm2 is not None and gemv is not None
    assert (nrm2.status, nrm2.result_code, gemv.status, gemv.result_code) == ("fail", None, "fail", None)
    assert nrm2.max_abs_err == pytest.approx(0.5, abs=1e-3)  # the stand-in adds 0.5 to the norm
    assert gemv.max_abs_err == pytest.approx(0.25, abs=1e-5)  # and 0.25 to y[7]
    assert gemv.max_rel_err is not None and 0 < gemv.max_rel_err < gemv.max_abs_err
    rows = {r.item: r for r in report.result_rows().rows}  # the figures are recorded with the case
    assert rows["cublas.snrm2"].numbers["max_abs_err"] == pytest.approx(nrm2.max_abs_err)


def test_a_driver_without_cublas_beside_it_does_not_run_the_cublas_cases(driver: Path, tmp_path: Path
                                                                       ) -> None:
    report = _probe(tmp_path, driver, None)
    assert _cases(report) == dict.fromkeys(CUBLAS, ("skipped", None, None))
    assert not report.has_problems
    create = report.case("cublas.create")
    assert create is not None and str(tmp_path / "libcuda.so.1") in create.detail  # where it looked
    assert report.case("cublas.snrm2").calls == ()  # type: ignore[union-attr]
    row = next(r for r in report.result_rows().rows if r.item == "cublas.snrm2")
    assert row.ok is None  # neither passed nor failed


def test_a_cublas_that_does_not_load_fails_the_handle_case_and_skips_the_rest(driver: Path, tmp_path: Path
                                                                            ) -> None:
    broken = tmp_path / "built" / "libcublas.so.12"
    broken.parent.mkdir()
    broken.write_bytes(b"\x7fELF but not a library\n")
    report = _probe(tmp_path / "release", driver, broken)
    statuses = {i: s for i, (s, _, _) in _cases(report).items()}
    assert statuses == {"cublas.create": "fail", "cublas.snrm2": "skipped", "cublas.sgemv": "skipped"}
    create = report.case("cublas.create")
    assert create is not None and not [c for c in create.calls if c.function.startswith("cublas")]


def test_the_cublas_beside_the_driver_is_this_platforms_highest_cuda_major(tmp_path: Path) -> None:
    names = ["libcuda.so.1", "libcublas.so", "libcublas.so.11", "libcublas.so.12", "libcublasLt.so.13",
             "cublas64_13.dll", "cublas64_12.dll", "cublas64_11.dll", "cublasLt64_13.dll", "nvcuda.dll"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "libcublas.so.13").mkdir()  # not a file
    assert cublas_beside(tmp_path / "libcuda.so.1", windows=False) == tmp_path / "libcublas.so.12"
    assert cublas_beside(tmp_path / "nvcuda.dll", windows=True) == tmp_path / "cublas64_13.dll"
    (tmp_path / "libcublas.so.12").unlink()
    (tmp_path / "libcublas.so.11").unlink()
    assert cublas_beside(tmp_path / "libcuda.so.1", windows=False) == tmp_path / "libcublas.so"  # v6's file
    assert cublas_beside(tmp_path / "none" / "libcuda.so.1", windows=False) is None
    (tmp_path / "libcublas.so").unlink()
    assert cublas_beside(tmp_path / "libcuda.so.1", windows=False) is None


def test_the_cublas_caveat_names_the_driver_probes_nrm2_and_gemv_cases() -> None:
    """Upstream ZLUDA's cuBLAS answers nrm2 and gemv NOT_SUPPORTED (observed in v7-preview.10): each
    release's caveat that says so names the driver probe's cases that show it, and they are in the probe."""
    from zluda_runner.probe.cases import CASES_BY_ID
    from zluda_runner.release.manifest import load_manifest

    named = {r.id: {w.strip(",;:()") for w in c.split()} & set(CASES_BY_ID)
             for r in load_manifest().releases for c in r.caveats if "nrm2" in c.split()}
    want = {"cublas.sgemv", "cublas.snrm2"}
    assert named == dict.fromkeys(("upstream-v5", "upstream-v6", "upstream-v7-preview.10",
                                   "upstream-v7-preview.11"), want)


def test_the_readme_lists_the_cublas_cases() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert all(f"`{case_id}`" in readme for case_id in CUBLAS)
