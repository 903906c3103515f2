"""cuBLAS beside the driver: a handle, and the level-1/2 calls upstream ZLUDA's cuBLAS lacks.

Upstream ZLUDA's cuBLAS implements GEMM only; every other function returns CUBLAS_STATUS_NOT_SUPPORTED
(vosen/ZLUDA ``zluda_blas/src/lib.rs``, ``impl::unimplemented``): ``cublas.snrm2`` and ``cublas.sgemv``
show it at the cuBLAS layer (no torch op reaches cublasSnrm2). Inputs go to device memory through the
driver (ZLUDA's driver and cuBLAS share the device), results are compared with the host's, in double.
"""

from __future__ import annotations

import math
from typing import Any

from zluda_runner.probe.blas import CUBLAS_OP_N
from zluda_runner.probe.cases.base import Case, CheckFailed, Setup, collector

CASES: list[Case] = []
case = collector(CASES, "cublas")
RTOL = 1e-5  # float32 sums of a few hundred terms, against the double reference


def _with_handle(s: Setup, body: Any) -> str | None:
    """``body(handle)`` between cublasCreate_v2 and cublasDestroy_v2 (destroyed whatever body did)."""
    s.context()  # the primary context, current: the one cuBLAS works in, and the memory's
    blas = s.cublas()
    handle = s.ffi.new("cublasHandle_t *")
    blas.call("cublasCreate_v2", handle)
    try:
        detail: str | None = body(handle[0])
    except BaseException:
        blas.try_call("cublasDestroy_v2", handle[0])
        raise
    blas.call("cublasDestroy_v2", handle[0])
    return detail


def _compare(got: list[float], want: list[float], what: str) -> None:
    """Each value within ``RTOL`` of the host's (relative to the largest), else :class:`CheckFailed`."""
    scale = max(1.0, *(abs(w) for w in want))
    diffs = [abs(g - w) if math.isfinite(g) else math.inf for g, w in zip(got, want, strict=True)]
    worst = max(range(len(diffs)), key=diffs.__getitem__)
    if diffs[worst] > RTOL * scale:
        raise CheckFailed(f"{what}[{worst}] is {got[worst]!r}, the host computes {want[worst]!r} "
                          f"(difference {diffs[worst]:.3g})", diffs[worst], diffs[worst] / scale)


@case("create", "cuBLAS handle create / destroy", "context.primary")
def case_create(s: Setup) -> str:
    _with_handle(s, lambda handle: None)
    return s.cublas().path


NRM2_X = [float((i % 17) - 8) / 4 for i in range(1000)]


@case("snrm2", "cublasSnrm2: Euclidean norm of a vector", "cublas.create", "memory.copy_roundtrip")
def case_snrm2(s: Setup) -> str:
    x = s.upload_floats(NRM2_X)
    result = s.ffi.new("float *", -1.0)

    def nrm2(handle: Any) -> None:
        s.cublas().call("cublasSnrm2_v2", handle, len(NRM2_X), s.ffi.cast("float *", x), 1, result)

    _with_handle(s, nrm2)
    want = math.sqrt(math.fsum(v * v for v in NRM2_X))
    _compare([float(result[0])], [want], "nrm2")
    return f"nrm2 of {len(NRM2_X)} floats: {result[0]:.6g}"


GEMV_M, GEMV_N, GEMV_ALPHA, GEMV_BETA = 96, 64, 2.0, 0.5
GEMV_A = [float((i * 3 + j * 5) % 11 - 5) / 8 for j in range(GEMV_N) for i in range(GEMV_M)]  # column-major
GEMV_X = [float(j % 5 - 2) / 2 for j in range(GEMV_N)]
GEMV_Y = [float(i % 3) for i in range(GEMV_M)]


@case("sgemv", "cublasSgemv: y = alpha A x + beta y", "cublas.create", "memory.copy_roundtrip")
def case_sgemv(s: Setup) -> str:
    a, x, y = s.upload_floats(GEMV_A), s.upload_floats(GEMV_X), s.upload_floats(GEMV_Y)
    alpha, beta = s.ffi.new("float *", GEMV_ALPHA), s.ffi.new("float *", GEMV_BETA)

    def gemv(handle: Any) -> None:
        on = [s.ffi.cast("float *", p) for p in (a, x, y)]
        s.cublas().call("cublasSgemv_v2", handle, CUBLAS_OP_N, GEMV_M, GEMV_N, alpha, on[0], GEMV_M, on[1], 1,
                        beta, on[2], 1)

    _with_handle(s, gemv)
    s.d.call("cuCtxSynchronize")  # cuBLAS may still be writing y on its stream
    got = s.download_floats(y, GEMV_M)
    want = [GEMV_ALPHA * math.fsum(GEMV_A[i + j * GEMV_M] * GEMV_X[j] for j in range(GEMV_N))
            + GEMV_BETA * GEMV_Y[i] for i in range(GEMV_M)]
    _compare(got, want, "y")
    return f"{GEMV_M} x {GEMV_N}, float32"
