"""cffi (ABI mode) bindings to the driver API of one libcuda, with call recording.

Each function is reached by its exported symbol (``cuMemAlloc_v2``); when the library does
not export it, through ``cuGetProcAddress_v2`` (or ``cuGetProcAddress``) at the version that
symbol stands for. Neither → :class:`MissingFunction`. Every call is recorded with its result,
named by the API it belongs to (:data:`RESULT_NAMES`: a CUresult, or a cuBLAS status for the
cuBLAS cases of :mod:`zluda_runner.probe.blas`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import cffi

from zluda_runner.core.serial import JsonMixin
from zluda_runner.data.cublas_api import status_name
from zluda_runner.data.driver_api import result_name
from zluda_runner.probe.signatures import FUNCTIONS, TYPES

LOOKUP_FUNCTIONS = """
CUresult cuGetProcAddress(const char *, void **, int, cuuint64_t);
"""  # cuGetProcAddress_v2 is declared with the probed functions
_BY_NAME = {f[0]: f for f in FUNCTIONS}
DRIVER_API: Final = "driver"
CUBLAS_API: Final = "cublas"
RESULT_NAMES = {DRIVER_API: result_name, CUBLAS_API: status_name}  # api -> the name of a result code


def symbol_of(name: str) -> str:
    """The exported symbol that stands for ``name`` (``cuMemAlloc`` -> ``cuMemAlloc_v2``)."""
    return _BY_NAME[name][1]


def make_ffi() -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(TYPES)
    ffi.cdef(LOOKUP_FUNCTIONS)
    ffi.cdef("\n".join(f"CUresult {sym}({params});" for _, sym, _, params in FUNCTIONS))
    return ffi


class MissingFunction(Exception):
    def __init__(self, name: str, symbol: str) -> None:
        super().__init__(f"{symbol} is not exported and cuGetProcAddress gave no {name}")
        self.name = name
        self.symbol = symbol


class CallFailed(Exception):
    """A call returned ``code``, a result of ``api`` (a key of :data:`RESULT_NAMES`)."""

    def __init__(self, function: str, code: int, api: str = DRIVER_API) -> None:
        super().__init__(f"{function} returned {code} ({RESULT_NAMES[api](code)})")
        self.function = function
        self.code = code
        self.api = api


@dataclass(frozen=True)
class CallRecord(JsonMixin):
    function: str
    result: int | None = None  # None: missing
    result_name: str = ""


@dataclass
class Driver:
    """One loaded libcuda; ``call(name, *args)`` calls and records, raising on a non-zero result."""

    ffi: cffi.FFI
    lib: Any
    calls: list[CallRecord] = field(default_factory=list)
    _cache: dict[str, Any] = field(default_factory=dict)
    path: str = ""

    @classmethod
    def load(cls, path: str, ffi: cffi.FFI | None = None) -> Driver:
        ffi = ffi or make_ffi()
        return cls(ffi, ffi.dlopen(path), path=path)

    def symbol(self, name: str) -> str:
        """What a call of ``name`` is recorded as (its exported symbol)."""
        return symbol_of(name)

    def function(self, name: str) -> Any:
        if name in self._cache:
            return self._cache[name]
        _, symbol, version, params = _BY_NAME[name]
        fn = None
        try:
            fn = getattr(self.lib, symbol)
        except AttributeError:
            fn = self._from_proc_address(name, version, params)
        if fn is None:
            self.calls.append(CallRecord(symbol, None, "missing"))
            raise MissingFunction(name, symbol)
        self._cache[name] = fn
        return fn

    def _from_proc_address(self, name: str, version: int, params: str) -> Any:
        pfn = self.ffi.new("void **")
        for lookup in ("cuGetProcAddress_v2", "cuGetProcAddress"):
            try:
                gpa = getattr(self.lib, lookup)
            except AttributeError:
                continue
            args = [name.encode(), pfn, version, 0] + ([self.ffi.NULL] if lookup.endswith("_v2") else [])
            rc = gpa(*args)
            self.calls.append(CallRecord(lookup, rc, result_name(rc)))
            if rc == 0 and pfn[0] != self.ffi.NULL:
                return self.ffi.cast(f"CUresult(*)({params})", pfn[0])
            return None
        return None

    def try_call(self, name: str, *args: Any) -> int:
        """Call and record; return the CUresult (raises only :class:`MissingFunction`)."""
        fn = self.function(name)
        rc = int(fn(*args))
        self.calls.append(CallRecord(_BY_NAME[name][1], rc, result_name(rc)))
        return rc

    def call(self, name: str, *args: Any) -> None:
        rc = self.try_call(name, *args)
        if rc != 0:
            raise CallFailed(_BY_NAME[name][1], rc)
