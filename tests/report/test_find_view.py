"""find's terminal view: one line per candidate tried, its variant named (the other HIP with its folder,
pinned memory off), and the lock with the variant and the HIP it was proven with (a golden file)."""

from __future__ import annotations

from tests.golden import assert_golden
from zluda_runner.finder.model import Candidate, CandidateVerdict, FindReport
from zluda_runner.release.lockfile import Lock, LockedCriterion, LockedHost, LockedRelease
from zluda_runner.report.find_view import render_lines


def test_the_view_names_each_variant_and_the_locked_hip() -> None:
    tried = (
        CandidateVerdict(Candidate("dir", "/r/zluda"), "plan", "fail", "libcublas.so: rocblas missing"),
        CandidateVerdict(Candidate("dir", "/r/zluda", "other-hip", "/opt/rocm-6.2.0"), "run", "fail",
                         "right failed: 1 of 4 values differ"),
        CandidateVerdict(Candidate("manifest", "upstream-v6", "pinned-memory-off"), "run", "unproven",
                         "ran, right, stable, speed pass; on the GPU not shown (not proven on the GPU)"),
    )
    lock = Lock(release=LockedRelease("manifest", "upstream-v6", "upstream-v6"), variant="pinned-memory-off",
                mechanism="ld_library_path", settings=(),
                host=LockedHost(os="linux", hip_version="6.2", hip_from="ROCm 6.2.0-1 at /opt/rocm-6.2.0",
                                hip_path="/opt/rocm-6.2.0"),
                workload=("python", "infer.py"), criteria=(LockedCriterion("ran", "pass", "1 of 1 ran"),))
    report = FindReport(("python", "infer.py"), "cpu", 1, tried, "no GPU telemetry", lock=lock,
                        lock_path="zluda.lock", stopped="passed")
    assert_golden("find_view_variants", "\n".join(render_lines(report)) + "\n")
