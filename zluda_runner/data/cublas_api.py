"""cuBLAS status codes (``cublasStatus_t``) and their names, for the probe's cuBLAS cases.

From NVIDIA's ``cublas_api.h`` as PyPI's ``nvidia-cublas`` 13.10.0.20 wheel ships it
(``nvidia/cu13/include/cublas_api.h``, enum ``cublasStatus_t``; the same numbers since CUDA 6:
``CUBLAS_STATUS_NOT_SUPPORTED`` = 15 is what upstream ZLUDA's cuBLAS returns for every function it
does not implement, vosen/ZLUDA ``zluda_blas/src/impl.rs``). Only the numbers are stored.
"""

from __future__ import annotations

CUBLAS_STATUS_SUCCESS = 0
CUBLAS_STATUS_NOT_SUPPORTED = 15
STATUSES: dict[int, str] = {
    CUBLAS_STATUS_SUCCESS: "CUBLAS_STATUS_SUCCESS",
    1: "CUBLAS_STATUS_NOT_INITIALIZED",
    3: "CUBLAS_STATUS_ALLOC_FAILED",
    7: "CUBLAS_STATUS_INVALID_VALUE",
    8: "CUBLAS_STATUS_ARCH_MISMATCH",
    11: "CUBLAS_STATUS_MAPPING_ERROR",
    13: "CUBLAS_STATUS_EXECUTION_FAILED",
    14: "CUBLAS_STATUS_INTERNAL_ERROR",
    CUBLAS_STATUS_NOT_SUPPORTED: "CUBLAS_STATUS_NOT_SUPPORTED",
    16: "CUBLAS_STATUS_LICENSE_ERROR",
}


def status_name(code: int) -> str:
    """``CUBLAS_STATUS_NOT_SUPPORTED`` for 15; ``cublasStatus_t(99)`` for a code the header does not name."""
    return STATUSES.get(code, f"cublasStatus_t({code})")
