"""cffi (ABI mode) bindings to the driver API of one libcuda, with call recording.

Each function is reached by its exported symbol (``cuMemAlloc_v2``); when the library does
not export it, through ``cuGetProcAddress_v2`` (or ``cuGetProcAddress``) at the version that
symbol stands for. Neither → :class:`MissingFunction`. Every call is recorded with its result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cffi

from zluda_runner.core.serial import JsonMixin
from zluda_runner.data.driver_api import result_name

TYPES = """
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef struct { char bytes[16]; } CUuuid;
typedef void *CUcontext; typedef void *CUmodule; typedef void *CUfunction; typedef void *CUstream;
typedef void *CUevent; typedef void *CUgraph; typedef void *CUgraphExec; typedef void *CUmemoryPool;
"""

# (name used by cuGetProcAddress, exported symbol, version it stands for, C parameter list)
FUNCTIONS: list[tuple[str, str, int, str]] = [
    ("cuInit", "cuInit", 2000, "unsigned int"),
    ("cuDriverGetVersion", "cuDriverGetVersion", 2020, "int *"),
    ("cuGetErrorName", "cuGetErrorName", 6000, "CUresult, const char **"),
    ("cuGetErrorString", "cuGetErrorString", 6000, "CUresult, const char **"),
    ("cuDeviceGetCount", "cuDeviceGetCount", 2000, "int *"),
    ("cuDeviceGet", "cuDeviceGet", 2000, "CUdevice *, int"),
    ("cuDeviceGetName", "cuDeviceGetName", 2000, "char *, int, CUdevice"),
    ("cuDeviceGetAttribute", "cuDeviceGetAttribute", 2000, "int *, int, CUdevice"),
    ("cuDeviceGetUuid", "cuDeviceGetUuid_v2", 11040, "CUuuid *, CUdevice"),
    ("cuDeviceTotalMem", "cuDeviceTotalMem_v2", 3020, "size_t *, CUdevice"),
    ("cuDeviceCanAccessPeer", "cuDeviceCanAccessPeer", 4000, "int *, CUdevice, CUdevice"),
    ("cuDeviceGetDefaultMemPool", "cuDeviceGetDefaultMemPool", 11020, "CUmemoryPool *, CUdevice"),
    ("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", 7000, "CUcontext *, CUdevice"),
    ("cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", 11000, "CUdevice"),
    ("cuDevicePrimaryCtxGetState", "cuDevicePrimaryCtxGetState", 7000, "CUdevice, unsigned int *, int *"),
    ("cuCtxSetCurrent", "cuCtxSetCurrent", 4000, "CUcontext"),
    ("cuCtxGetCurrent", "cuCtxGetCurrent", 4000, "CUcontext *"),
    ("cuCtxCreate", "cuCtxCreate_v2", 3020, "CUcontext *, unsigned int, CUdevice"),
    ("cuCtxDestroy", "cuCtxDestroy_v2", 4000, "CUcontext"),
    ("cuCtxPushCurrent", "cuCtxPushCurrent_v2", 4000, "CUcontext"),
    ("cuCtxPopCurrent", "cuCtxPopCurrent_v2", 4000, "CUcontext *"),
    ("cuCtxSynchronize", "cuCtxSynchronize", 2000, ""),
    ("cuCtxGetDevice", "cuCtxGetDevice", 2000, "CUdevice *"),
    ("cuCtxGetStreamPriorityRange", "cuCtxGetStreamPriorityRange", 5050, "int *, int *"),
    ("cuMemGetInfo", "cuMemGetInfo_v2", 3020, "size_t *, size_t *"),
    ("cuMemAlloc", "cuMemAlloc_v2", 3020, "CUdeviceptr *, size_t"),
    ("cuMemFree", "cuMemFree_v2", 3020, "CUdeviceptr"),
    ("cuMemGetAddressRange", "cuMemGetAddressRange_v2", 3020, "CUdeviceptr *, size_t *, CUdeviceptr"),
    ("cuMemAllocManaged", "cuMemAllocManaged", 6000, "CUdeviceptr *, size_t, unsigned int"),
    ("cuMemcpyHtoD", "cuMemcpyHtoD_v2", 3020, "CUdeviceptr, const void *, size_t"),
    ("cuMemcpyDtoH", "cuMemcpyDtoH_v2", 3020, "void *, CUdeviceptr, size_t"),
    ("cuMemcpyDtoD", "cuMemcpyDtoD_v2", 3020, "CUdeviceptr, CUdeviceptr, size_t"),
    ("cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", 3020, "CUdeviceptr, const void *, size_t, CUstream"),
    ("cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2", 3020, "void *, CUdeviceptr, size_t, CUstream"),
    ("cuMemsetD8", "cuMemsetD8_v2", 3020, "CUdeviceptr, unsigned char, size_t"),
    ("cuMemsetD32", "cuMemsetD32_v2", 3020, "CUdeviceptr, unsigned int, size_t"),
    ("cuMemAllocHost", "cuMemAllocHost_v2", 3020, "void **, size_t"),
    ("cuMemFreeHost", "cuMemFreeHost", 2000, "void *"),
    ("cuMemHostRegister", "cuMemHostRegister_v2", 6050, "void *, size_t, unsigned int"),
    ("cuMemHostUnregister", "cuMemHostUnregister", 4000, "void *"),
    ("cuMemAllocAsync", "cuMemAllocAsync", 11020, "CUdeviceptr *, size_t, CUstream"),
    ("cuMemFreeAsync", "cuMemFreeAsync", 11020, "CUdeviceptr, CUstream"),
    ("cuStreamCreate", "cuStreamCreate", 2000, "CUstream *, unsigned int"),
    ("cuStreamCreateWithPriority", "cuStreamCreateWithPriority", 5050, "CUstream *, unsigned int, int"),
    ("cuStreamDestroy", "cuStreamDestroy_v2", 4000, "CUstream"),
    ("cuStreamSynchronize", "cuStreamSynchronize", 2000, "CUstream"),
    ("cuStreamQuery", "cuStreamQuery", 2000, "CUstream"),
    ("cuStreamBeginCapture", "cuStreamBeginCapture_v2", 10010, "CUstream, int"),
    ("cuStreamEndCapture", "cuStreamEndCapture", 10000, "CUstream, CUgraph *"),
    (
        "cuGraphInstantiateWithFlags",
        "cuGraphInstantiateWithFlags",
        11040,
        "CUgraphExec *, CUgraph, unsigned long long",
    ),
    ("cuGraphLaunch", "cuGraphLaunch", 10000, "CUgraphExec, CUstream"),
    ("cuGraphExecDestroy", "cuGraphExecDestroy", 10000, "CUgraphExec"),
    ("cuGraphDestroy", "cuGraphDestroy", 10000, "CUgraph"),
    ("cuEventCreate", "cuEventCreate", 2000, "CUevent *, unsigned int"),
    ("cuEventRecord", "cuEventRecord", 2000, "CUevent, CUstream"),
    ("cuEventSynchronize", "cuEventSynchronize", 2000, "CUevent"),
    ("cuEventQuery", "cuEventQuery", 2000, "CUevent"),
    ("cuEventDestroy", "cuEventDestroy_v2", 4000, "CUevent"),
    ("cuEventElapsedTime", "cuEventElapsedTime_v2", 12080, "float *, CUevent, CUevent"),
    ("cuModuleLoadData", "cuModuleLoadData", 2000, "CUmodule *, const void *"),
    ("cuModuleUnload", "cuModuleUnload", 2000, "CUmodule"),
    ("cuModuleGetFunction", "cuModuleGetFunction", 2000, "CUfunction *, CUmodule, const char *"),
    ("cuFuncGetAttribute", "cuFuncGetAttribute", 2020, "int *, int, CUfunction"),
    (
        "cuLaunchKernel",
        "cuLaunchKernel",
        4000,
        "CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
        "unsigned int, CUstream, void **, void **",
    ),
    (
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        6050,
        "int *, CUfunction, int, size_t",
    ),
    (
        "cuOccupancyMaxPotentialBlockSize",
        "cuOccupancyMaxPotentialBlockSize",
        6050,
        "int *, int *, CUfunction, void *, size_t, int",
    ),
]
LOOKUP_FUNCTIONS = """
CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, int *);
CUresult cuGetProcAddress(const char *, void **, int, cuuint64_t);
"""
_BY_NAME = {f[0]: f for f in FUNCTIONS}


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
    def __init__(self, function: str, code: int) -> None:
        super().__init__(f"{function} returned {code} ({result_name(code)})")
        self.function = function
        self.code = code


@dataclass
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

    @classmethod
    def load(cls, path: str, ffi: cffi.FFI | None = None) -> Driver:
        ffi = ffi or make_ffi()
        return cls(ffi, ffi.dlopen(path))

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
