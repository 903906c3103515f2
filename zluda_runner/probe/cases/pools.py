"""Stream-ordered memory pools, virtual memory management (torch's expandable segments), IPC."""

from __future__ import annotations

from typing import Any

from zluda_runner.probe.cases.base import Case, N, Setup, collector, expect, float_bits

CASES: list[Case] = []
pool = collector(CASES, "mempool")
vmm = collector(CASES, "vmm")
ipc = collector(CASES, "ipc")
CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4
CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7


def _pool_props(s: Setup) -> Any:
    props = s.ffi.new("CUmemPoolProps *")
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED
    props.location.type, props.location.id = CU_MEM_LOCATION_TYPE_DEVICE, s.device()
    return props


@pool("default", "default memory pool", "context.primary")
def case_default_pool(s: Setup) -> None:
    s.context()
    p = s.ffi.new("CUmemoryPool *")
    s.d.call("cuDeviceGetDefaultMemPool", p, s.device())
    expect(p[0] != s.ffi.NULL, "null default pool")


@pool("current", "current pool get / set", "context.primary")
def case_current_pool(s: Setup) -> None:
    s.context()
    p = s.ffi.new("CUmemoryPool *")
    s.d.call("cuDeviceGetMemPool", p, s.device())
    s.d.call("cuDeviceSetMemPool", s.device(), p[0])


@pool("alloc_async", "stream-ordered alloc / free", "context.primary")
def case_alloc_async(s: Setup) -> None:
    stream = s.stream_or_default()
    ptr = s.ffi.new("CUdeviceptr *")
    s.d.call("cuMemAllocAsync", ptr, 4 * N, stream)
    # the allocation is usable outside its stream once the stream has reached it
    s.d.call("cuStreamSynchronize", stream)
    expect(ptr[0] != 0, "cuMemAllocAsync gave a null pointer")
    s.d.call("cuMemsetD32", ptr[0], float_bits(-1.5), N)
    expect(s.download_floats(ptr[0], N) == [-1.5] * N, "memory from the pool does not hold what was set")
    s.d.call("cuMemFreeAsync", ptr[0], stream)
    s.d.call("cuStreamSynchronize", stream)


@pool("create", "explicit pool: create, attributes, access, alloc, trim, destroy", "context.primary")
def case_pool_create(s: Setup) -> str:
    s.context()
    p = s.ffi.new("CUmemoryPool *")
    s.d.call("cuMemPoolCreate", p, _pool_props(s))
    threshold = s.ffi.new("cuuint64_t *", 1 << 20)
    s.d.call("cuMemPoolSetAttribute", p[0], CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, threshold)
    used = s.ffi.new("cuuint64_t *")
    s.d.call("cuMemPoolGetAttribute", p[0], CU_MEMPOOL_ATTR_USED_MEM_CURRENT, used)
    access = s.ffi.new("CUmemAccessDesc *")
    access.location.type, access.location.id = CU_MEM_LOCATION_TYPE_DEVICE, s.device()
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    s.d.call("cuMemPoolSetAccess", p[0], access, 1)
    flags = s.ffi.new("int *")
    s.d.call("cuMemPoolGetAccess", flags, p[0], s.ffi.addressof(access, "location"))
    stream = s.stream_or_default()
    ptr = s.ffi.new("CUdeviceptr *")
    s.d.call("cuMemAllocFromPoolAsync", ptr, 4 * N, p[0], stream)
    s.d.call("cuMemFreeAsync", ptr[0], stream)
    s.d.call("cuStreamSynchronize", stream)
    s.d.call("cuMemPoolTrimTo", p[0], 0)
    s.d.call("cuMemPoolDestroy", p[0])
    return f"access flags {flags[0]}, {used[0]} bytes in use before allocating"


@vmm("map", "reserve, create, map, set access, unmap, release", "context.primary")
def case_vmm(s: Setup) -> str:
    s.context()
    prop = s.ffi.new("CUmemAllocationProp *")
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type, prop.location.id = CU_MEM_LOCATION_TYPE_DEVICE, s.device()
    gran = s.ffi.new("size_t *")
    s.d.call("cuMemGetAllocationGranularity", gran, prop, 0)  # CU_MEM_ALLOC_GRANULARITY_MINIMUM
    size = max(int(gran[0]), 4 * N)
    handle = s.ffi.new("CUmemGenericAllocationHandle *")
    s.d.call("cuMemCreate", handle, size, prop, 0)
    got = s.ffi.new("CUmemAllocationProp *")
    s.d.call("cuMemGetAllocationPropertiesFromHandle", got, handle[0])
    va = s.ffi.new("CUdeviceptr *")
    s.d.call("cuMemAddressReserve", va, size, 0, 0, 0)
    s.d.call("cuMemMap", va[0], size, 0, handle[0], 0)
    access = s.ffi.new("CUmemAccessDesc *")
    access.location.type, access.location.id = CU_MEM_LOCATION_TYPE_DEVICE, s.device()
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    s.d.call("cuMemSetAccess", va[0], size, access, 1)
    flags = s.ffi.new("unsigned long long *")
    s.d.call("cuMemGetAccess", flags, s.ffi.addressof(access, "location"), va[0])
    s.d.call("cuMemsetD32", va[0], float_bits(4.0), N)
    expect(s.download_floats(va[0], N) == [4.0] * N, "mapped memory does not hold what was set")
    s.d.call("cuMemUnmap", va[0], size)
    s.d.call("cuMemAddressFree", va[0], size)
    s.d.call("cuMemRelease", handle[0])
    return f"granularity {gran[0]} bytes"


@ipc("mem_handle", "IPC handle of device memory", "memory.alloc_free")
def case_ipc_mem(s: Setup) -> None:
    ptr = s.alloc(1 << 16)
    handle = s.ffi.new("CUipcMemHandle *")
    s.d.call("cuIpcGetMemHandle", handle, ptr)


@ipc("event_handle", "IPC handle of an interprocess event", "context.primary")
def case_ipc_event(s: Setup) -> None:
    s.context()
    ev = s.ffi.new("CUevent *")
    s.d.call("cuEventCreate", ev, 0x6)  # CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS
    handle = s.ffi.new("CUipcEventHandle *")
    s.d.call("cuIpcGetEventHandle", handle, ev[0])
    s.d.call("cuEventDestroy", ev[0])
