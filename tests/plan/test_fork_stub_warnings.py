"""``plan`` warns when it replaces a library with one of the fork's stubs, as it does for v6's cuFFT, with the
source line (issue 22): the fork's libnccl.so.2 (every call returns ncclInternalError) and libcufftw.so.10
(every function ``unimplemented!()``: the process aborts), from the manifest (lshqqytiger/ZLUDA@5e71745).

The plan is made from the manifest's file list alone (a release not downloaded, as ``plan`` does), for a
target built for CUDA 11 that needs those two libraries."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.inspection.profile import LibraryNeed, TargetProfile
from zluda_runner.plan.build import make_plan
from zluda_runner.plan.shimdeps import ShimDeps
from zluda_runner.plan.shimfacts import provisional_facts
from zluda_runner.release.manifest import load_manifest
from zluda_runner.release.provisional import provisional_layout


def _asset():  # type: ignore[no-untyped-def]
    return load_manifest().find("fork-3.9.5").asset("ZLUDA-linux-amd64.tar.gz")


def _stub_reasons() -> dict[str, str]:
    """What fails in each library of the release that stands in by name only (the manifest's stub_reason)."""
    return {Path(f.path).name: f.stub_reason for f in _asset().files if f.stub}


def _plan_for(needs: tuple[LibraryNeed, ...]):  # type: ignore[no-untyped-def]
    asset = _asset()
    layout = provisional_layout(Path("/cache/releases/fork-3.9.5"), asset)
    target = TargetProfile(os="linux", build="cuda", cuda_version="11.8", cuda_major=11,
                           roots=("/opt/app/bin/app",), libraries=needs)
    return make_plan(target, layout, facts_reader=provisional_facts, deps_resolver=lambda shims: ShimDeps())


def test_the_forks_nccl_and_cufftw_stubs_are_warnings_with_their_source() -> None:
    plan = _plan_for((
        LibraryNeed("libnccl.so.2", "nccl", 2, requested_by=("/opt/app/lib/libtorch_cuda.so",)),
        LibraryNeed("libcufftw.so.10", "cufftw", 10, requested_by=("/opt/app/bin/app",)),
    ))
    by_need = {b.need: b for b in plan.bindings}
    nccl, fftw = by_need["libnccl.so.2"], by_need["libcufftw.so.10"]
    for binding in (nccl, fftw):
        assert binding.action == "replace" and binding.verdict == "warn", binding
    stubs = _stub_reasons()
    nccl_problem = next(p for p in nccl.problems if stubs["libnccl.so.2"] in p)
    assert "ncclInternalError" in nccl_problem
    assert "publisher: lshqqytiger/ZLUDA:zluda_ccl/src/nccl.rs@5e717459179dc272b7d7d23391f0fad66c7459cf" in (
        nccl_problem)
    fftw_problem = next(p for p in fftw.problems if stubs["libcufftw.so.10"] in p)  # it aborts the process
    fftw_source = "lshqqytiger/ZLUDA:zluda_fftw/src/cufftw.rs@5e717459179dc272b7d7d23391f0fad66c7459cf"
    assert fftw_source in fftw_problem


def test_a_target_that_needs_neither_gets_no_stub_warning() -> None:
    plan = _plan_for((LibraryNeed("libcublas.so.11", "cublas", 11, requested_by=("/opt/app/bin/app",)),))
    assert not [p for b in plan.bindings for p in b.problems for why in _stub_reasons().values() if why in p]
