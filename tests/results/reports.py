"""Reports built from zluda-runner's own dataclasses, for recording in the store tests."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.abtest.model import (
    AbReport,
    OutputComparison,
    SideSummary,
    TimingComparison,
    TimingStats,
)
from zluda_runner.doctor.model import Check, DoctorReport, Status
from zluda_runner.host.facts import HostFacts
from zluda_runner.host.hip import HipInfo
from zluda_runner.host.model import GpuAgent
from zluda_runner.launch.verdict import BindingEvidence, VerifyResult
from zluda_runner.probe.model import KIND_TORCH, CaseResult, ProbeReport
from zluda_runner.trace.model import FirstFailure, TraceCall, TraceReport

HOST = {"gfx": "gfx1100", "gpu_name": "Radeon RX 7900 XTX", "hip_version": "6.2", "driver_version": "6.8.5"}
FORK = {"id": "fork-3.9.5", "asset": "ZLUDA-windows-rocm6-amd64.zip", "sha256": "ab" * 32}
TORCH_118 = {"torch_version": "2.4.1+cu118", "cuda_major": 11}


def torch_ops(n: int, failing: set[int] = frozenset(), tag: str = "") -> ProbeReport:  # type: ignore[assignment]
    """A torch-op probe report with ``n`` ops, the ``failing`` ones mismatching."""
    cases = [
        CaseResult(
            id=f"op{i:03d}.fp16{tag}",
            area="torch",
            title=f"op {i}",
            status="mismatch" if i in failing else "pass",
            detail="max abs err 0.5 > atol" if i in failing else "",
            max_abs_err=0.5 if i in failing else 1e-4,
            max_rel_err=0.1 if i in failing else 1e-5,
            duration_s=0.01,
        )
        for i in range(n)
    ]
    return ProbeReport(kind=KIND_TORCH, target="python", cases=tuple(cases))


def trace_report() -> TraceReport:
    return TraceReport(
        source="interposer",
        command=["python", "infer.py"],
        exit_code=0,
        calls=[
            TraceCall("cuInit", 1, {"CUDA_SUCCESS": 1}),
            TraceCall(
                "cuGetProcAddress_v2",
                420,
                {"CUDA_SUCCESS": 400, "CUDA_ERROR_NOT_FOUND": 20},
                FirstFailure("CUDA_ERROR_NOT_FOUND", 500, 7),
            ),
            TraceCall("cuMemAlloc_v2", 12, {"CUDA_SUCCESS": 12}),
        ],
    )


def ab_report(median_a: float = 1.2, agree: bool = True) -> AbReport:
    a = TimingStats(5, median_a, median_a * 0.9, median_a * 1.1)
    b = TimingStats(5, 1.0, 0.9, 1.1)
    return AbReport(
        a=SideSummary("A", ("zluda-run", "python", "infer.py"), runs=5),
        b=SideSummary("B", ("python", "infer.py"), runs=5),
        outputs=(
            OutputComparison("logits", "agree" if agree else "differ", max_abs_error=1e-3, elements=1000),
        ),
        timings=(TimingComparison("generate", a, b, median_a / 1.0, "B" if median_a > 1.05 else "same"),),
        agree=agree,
        faster="B" if median_a > 1.05 else "same",
        verdict=f"B is {median_a:.2f}x faster than A on 'generate'",
    )


def verify_result(home: Path) -> VerifyResult:
    return VerifyResult(
        exit_code=0,
        bindings=[
            BindingEvidence("libcuda.so.1", home / "zluda/libcuda.so.1", home / "zluda/libcuda.so.1", True),
            BindingEvidence(
                "libcublas.so.13",
                home / "zluda/libcublas.so.13",
                home / "venv/nvidia/cu13/lib/libcublas.so.13",
                False,
            ),
        ],
    )


def doctor_report() -> DoctorReport:
    facts = HostFacts(
        os="linux",
        arch="x86_64",
        os_version="Debian 12",
        python="3.11",
        gpus=[GpuAgent(0, "Radeon RX 7900 XTX", "gfx1100", "kfd")],
        hip=HipInfo(runtime_version=60241134),
        driver_version="6.8.5",
    )
    return DoctorReport(
        facts=facts,
        checks=(
            Check("gpu", Status.OK, "Radeon RX 7900 XTX (gfx1100)"),
            Check("rocblas", Status.WARN, "no hipBLASLt kernels for gfx1100"),
            Check("kfd", Status.FAIL, "/dev/kfd: permission denied", fix="usermod -aG render,video $USER"),
        ),
    )
