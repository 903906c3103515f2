"""cuBLAS for the driver probe's cuBLAS cases: which library they load, and its calls, recorded.

Which: the cuBLAS file beside the probed driver, this platform's, as the release ships it and the launch
binds it for a CUDA build (ZLUDA's Linux ``libcublas.so`` with its ``libcublas.so.12``/``.11`` links,
Windows ``cublas64_12.dll``/``cublas64_11.dll``, the fork's ``cublas.dll``), recognised by name as
everywhere else (:func:`zluda_runner.core.families.parse_library_name`), the highest CUDA major first.
A driver with no cuBLAS beside it (NVIDIA's, a driver-only target) has the cuBLAS cases not run.

Calls go through cffi (ABI mode) as the driver's do, recorded in the same list with their
``cublasStatus_t`` named (:mod:`zluda_runner.data.cublas_api`); a non-zero status raises
:class:`~zluda_runner.probe.bindings.CallFailed` of the cuBLAS API. The library is loaded at its first
call (inside a case, so a cuBLAS that does not load fails that case, not the probe).
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cffi

from zluda_runner.core.families import parse_library_name
from zluda_runner.data.cublas_api import status_name
from zluda_runner.probe.bindings import CUBLAS_API, CallFailed, CallRecord, MissingFunction

# cublas_api.h (nvidia-cublas 13.10.0.20, nvidia/cu13/include): CUBLASWINAPI is __stdcall, the one
# calling convention of x86-64 Windows, so these are the same declarations on both platforms.
DECLARATIONS = """
typedef struct cublasContext *cublasHandle_t;
int cublasCreate_v2(cublasHandle_t *handle);
int cublasDestroy_v2(cublasHandle_t handle);
int cublasSnrm2_v2(cublasHandle_t handle, int n, const float *x, int incx, float *result);
int cublasSgemv_v2(cublasHandle_t handle, int trans, int m, int n, const float *alpha, const float *A,
                   int lda, const float *x, int incx, const float *beta, float *y, int incy);
"""
CUBLAS_OP_N = 0  # cublasOperation_t, cublas_api.h
MAX_ENTRIES = 10_000  # a driver's folder read for its cuBLAS: at most this many names


def cublas_beside(libcuda: Path, *, windows: bool = sys.platform == "win32") -> Path | None:
    """The cuBLAS in ``libcuda``'s folder for this platform (highest CUDA major, then by name), or None."""
    try:
        entries = list(itertools.islice(Path(libcuda).parent.iterdir(), MAX_ENTRIES))
    except OSError:
        return None
    found: list[tuple[int, str, Path]] = []
    for path in entries:
        parsed = parse_library_name(path.name)
        if parsed is None or parsed.family != "cublas" or (parsed.os == "windows") != windows:
            continue
        if path.is_file():
            found.append((-(parsed.major or 0), path.name, path))
    return min(found)[2] if found else None


class NotLoaded(Exception):
    """The cuBLAS library would not load (its own dependencies missing, not a library)."""


class NotExported(MissingFunction):
    def __init__(self, symbol: str, path: str) -> None:
        Exception.__init__(self, f"{path} does not export {symbol}")
        self.name = self.symbol = symbol


@dataclass
class Blas:
    """One cuBLAS library, loaded at the first call; ``call(symbol, *args)`` calls and records into
    ``calls`` (the driver's list: one case's calls in the order made), raising on a non-zero status."""

    path: str
    ffi: cffi.FFI
    calls: list[CallRecord]
    _lib: Any = None
    _failed: str = ""
    _cache: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        try:  # the declarations, once per FFI (the cases make handles with it)
            self.ffi.typeof("cublasHandle_t")
        except cffi.CDefError:
            self.ffi.cdef(DECLARATIONS)

    def symbol(self, name: str) -> str:
        return name

    def _load(self) -> Any:
        if self._lib is None and not self._failed:
            try:
                self._lib = self.ffi.dlopen(self.path)
            except OSError as exc:
                self._failed = f"cannot load {self.path}: {exc}"
        if self._failed:
            raise NotLoaded(self._failed)
        return self._lib

    def function(self, name: str) -> Any:
        if name not in self._cache:
            try:
                self._cache[name] = getattr(self._load(), name)
            except AttributeError:
                self.calls.append(CallRecord(name, None, "missing"))
                raise NotExported(name, self.path) from None
        return self._cache[name]

    def try_call(self, name: str, *args: Any) -> int:
        rc = int(self.function(name)(*args))
        self.calls.append(CallRecord(name, rc, status_name(rc)))
        return rc

    def call(self, name: str, *args: Any) -> None:
        rc = self.try_call(name, *args)
        if rc != 0:
            raise CallFailed(name, rc, CUBLAS_API)
