"""The driver probe's catalogue: small cases by area, each able to set itself up from nothing.

A case gets a :class:`Setup` whose helpers (``device()``, ``context()``, ``module()`` ...)
make, in a fresh process, whatever the case builds on; ``needs`` names the earlier cases that
prove those helpers work, so a case whose prerequisite failed is skipped, not run.
A case raises :class:`CheckFailed` when calls succeed but the results are wrong.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zluda_runner.probe.bindings import Driver

PTX_FILE = Path(__file__).resolve().parent / "vadd.ptx"
N = 1024
CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1
CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_STREAM_NON_BLOCKING = 1
CU_STREAM_CAPTURE_MODE_GLOBAL = 0
CU_EVENT_DEFAULT = 0
CU_MEM_ATTACH_GLOBAL = 1
CUDA_ERROR_NOT_SUPPORTED = 801


class CheckFailed(Exception):
    """The calls succeeded, the results are wrong."""


class Setup:
    """Lazily made prerequisites, shared by the cases of one worker process."""

    def __init__(self, driver: Driver) -> None:
        self.d = driver
        self.ffi = driver.ffi
        self._done: dict[str, Any] = {}

    def _once(self, key: str, make: Callable[[], Any]) -> Any:
        if key not in self._done:
            self._done[key] = make()
        return self._done[key]

    def init(self) -> None:
        self._once("init", lambda: self.d.call("cuInit", 0))

    def device(self) -> int:
        def make() -> int:
            self.init()
            dev = self.ffi.new("CUdevice *")
            self.d.call("cuDeviceGet", dev, 0)
            return int(dev[0])

        return self._once("device", make)

    def context(self) -> Any:
        def make() -> Any:
            ctx = self.ffi.new("CUcontext *")
            self.d.call("cuDevicePrimaryCtxRetain", ctx, self.device())
            self.d.call("cuCtxSetCurrent", ctx[0])
            return ctx[0]

        return self._once("context", make)

    def restore_context(self) -> None:
        """Make the primary context current again, if an earlier case set it up."""
        if "context" in self._done:
            self.d.call("cuCtxSetCurrent", self._done["context"])

    def alloc(self, nbytes: int) -> int:
        self.context()
        ptr = self.ffi.new("CUdeviceptr *")
        self.d.call("cuMemAlloc", ptr, nbytes)
        return int(ptr[0])

    def stream(self) -> Any:
        def make() -> Any:
            self.context()
            s = self.ffi.new("CUstream *")
            self.d.call("cuStreamCreate", s, CU_STREAM_NON_BLOCKING)
            return s[0]

        return self._once("stream", make)

    def module(self) -> Any:
        def make() -> Any:
            self.context()
            mod = self.ffi.new("CUmodule *")
            image = self.ffi.new("char[]", PTX_FILE.read_bytes())
            self._done["ptx_image"] = image
            self.d.call("cuModuleLoadData", mod, image)
            return mod[0]

        return self._once("module", make)

    def function(self) -> Any:
        def make() -> Any:
            fn = self.ffi.new("CUfunction *")
            self.d.call("cuModuleGetFunction", fn, self.module(), b"vadd")
            return fn[0]

        return self._once("function", make)

    # data helpers
    def upload_floats(self, values: list[float]) -> int:
        ptr = self.alloc(4 * len(values))
        data = self.ffi.new("float[]", values)
        self.d.call("cuMemcpyHtoD", ptr, data, 4 * len(values))
        return ptr

    def download_floats(self, ptr: int, n: int) -> list[float]:
        out = self.ffi.new("float[]", n)
        self.d.call("cuMemcpyDtoH", out, ptr, 4 * n)
        return list(out)

    def launch_vadd(self, stream: Any, a: int, b: int, c: int, n: int) -> None:
        args = [
            self.ffi.new("CUdeviceptr *", a),
            self.ffi.new("CUdeviceptr *", b),
            self.ffi.new("CUdeviceptr *", c),
            self.ffi.new("int *", n),
        ]
        params = self.ffi.new("void *[]", [self.ffi.cast("void *", p) for p in args])
        block = 256
        self.d.call(
            "cuLaunchKernel",
            self.function(),
            (n + block - 1) // block,
            1,
            1,
            block,
            1,
            1,
            0,
            stream,
            params,
            self.ffi.NULL,
        )


@dataclass(frozen=True)
class Case:
    id: str
    area: str
    title: str
    run: Callable[[Setup], str | None]  # returns a detail line (or None)
    needs: tuple[str, ...] = ()


def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise CheckFailed(message)


# --- init and versions ---------------------------------------------------------------------------


def case_init(s: Setup) -> str | None:
    s.init()
    return None


def case_driver_version(s: Setup) -> str:
    v = s.ffi.new("int *")
    s.d.call("cuDriverGetVersion", v)
    _expect(v[0] > 0, f"driver version {v[0]} is not positive")
    return f"driver version {v[0] // 1000}.{v[0] % 1000 // 10} ({v[0]})"


# --- device --------------------------------------------------------------------------------------


def case_device_count(s: Setup) -> str:
    s.init()
    n = s.ffi.new("int *")
    s.d.call("cuDeviceGetCount", n)
    _expect(n[0] > 0, "no device (count 0)")
    return f"{n[0]} device(s)"


def case_device_get(s: Setup) -> str:
    return f"device 0 is handle {s.device()}"


def case_device_name(s: Setup) -> str:
    buf = s.ffi.new("char[]", 256)
    s.d.call("cuDeviceGetName", buf, 256, s.device())
    name = s.ffi.string(buf).decode(errors="replace")
    _expect(bool(name), "empty device name")
    return name


def case_device_attributes(s: Setup) -> str:
    dev = s.device()
    got = {}
    for label, attr in (
        ("cc_major", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
        ("cc_minor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        ("sms", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        ("warp", CU_DEVICE_ATTRIBUTE_WARP_SIZE),
        ("max_threads", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
    ):
        v = s.ffi.new("int *")
        s.d.call("cuDeviceGetAttribute", v, attr, dev)
        got[label] = v[0]
    _expect(got["warp"] > 0 and got["max_threads"] > 0, f"implausible attributes {got}")
    return f"compute capability {got['cc_major']}.{got['cc_minor']}, {got['sms']} SMs, warp {got['warp']}"


def case_device_uuid(s: Setup) -> str:
    uuid = s.ffi.new("CUuuid *")
    s.d.call("cuDeviceGetUuid", uuid, s.device())
    return bytes(s.ffi.buffer(uuid.bytes, 16)).hex()


def case_device_total_mem(s: Setup) -> str:
    size = s.ffi.new("size_t *")
    s.d.call("cuDeviceTotalMem", size, s.device())
    _expect(size[0] > 0, "total memory 0")
    return f"{size[0] / 2**30:.1f} GiB"


# --- contexts ------------------------------------------------------------------------------------


def case_primary_context(s: Setup) -> str | None:
    ctx = s.context()
    cur = s.ffi.new("CUcontext *")
    s.d.call("cuCtxGetCurrent", cur)
    _expect(cur[0] == ctx, "cuCtxGetCurrent does not return the context just set")
    return None


def case_primary_state(s: Setup) -> str:
    s.context()
    flags, active = s.ffi.new("unsigned int *"), s.ffi.new("int *")
    s.d.call("cuDevicePrimaryCtxGetState", s.device(), flags, active)
    _expect(active[0] == 1, "primary context retained but reported inactive")
    return f"flags {flags[0]}, active {active[0]}"


def case_context_create(s: Setup) -> str | None:
    dev = s.device()
    ctx = s.ffi.new("CUcontext *")
    s.d.call("cuCtxCreate", ctx, 0, dev)
    got = s.ffi.new("CUdevice *")
    s.d.call("cuCtxGetDevice", got)
    s.d.call("cuCtxDestroy", ctx[0])
    s.restore_context()  # later cases must not depend on how the driver pops a destroyed context
    _expect(got[0] == dev, "new context is on another device")
    return None


def case_push_pop(s: Setup) -> str | None:
    ctx = s.context()
    s.d.call("cuCtxPushCurrent", ctx)
    popped = s.ffi.new("CUcontext *")
    s.d.call("cuCtxPopCurrent", popped)
    _expect(popped[0] == ctx, "popped another context than pushed")
    s.d.call("cuCtxSetCurrent", ctx)
    return None


def case_ctx_synchronize(s: Setup) -> str | None:
    s.context()
    s.d.call("cuCtxSynchronize")
    return None


def case_mem_info(s: Setup) -> str:
    s.context()
    free_b, total = s.ffi.new("size_t *"), s.ffi.new("size_t *")
    s.d.call("cuMemGetInfo", free_b, total)
    _expect(0 < free_b[0] <= total[0], f"free {free_b[0]} / total {total[0]} implausible")
    return f"{free_b[0] / 2**30:.1f} of {total[0] / 2**30:.1f} GiB free"


# --- memory --------------------------------------------------------------------------------------


def case_alloc_free(s: Setup) -> str | None:
    ptr = s.alloc(1 << 20)
    _expect(ptr != 0, "cuMemAlloc gave a null pointer")
    s.d.call("cuMemFree", ptr)
    return None


def case_copy_roundtrip(s: Setup) -> str | None:
    values = [float(i) for i in range(N)]
    ptr = s.upload_floats(values)
    _expect(s.download_floats(ptr, N) == values, "data read back differs from data written")
    s.d.call("cuMemFree", ptr)
    return None


def case_copy_dtod(s: Setup) -> str | None:
    values = [float(i) * 0.5 for i in range(N)]
    src = s.upload_floats(values)
    dst = s.alloc(4 * N)
    s.d.call("cuMemcpyDtoD", dst, src, 4 * N)
    _expect(s.download_floats(dst, N) == values, "device-to-device copy differs")
    return None


def case_memset_d32(s: Setup) -> str | None:
    ptr = s.alloc(4 * N)
    pattern = struct.unpack("<I", struct.pack("<f", 2.5))[0]
    s.d.call("cuMemsetD32", ptr, pattern, N)
    _expect(s.download_floats(ptr, N) == [2.5] * N, "cuMemsetD32 pattern not read back")
    return None


def case_memset_d8(s: Setup) -> str | None:
    ptr = s.alloc(N)
    s.d.call("cuMemsetD8", ptr, 0x5A, N)
    out = s.ffi.new("unsigned char[]", N)
    s.d.call("cuMemcpyDtoH", out, ptr, N)
    _expect(bytes(s.ffi.buffer(out, N)) == b"\x5a" * N, "cuMemsetD8 pattern not read back")
    return None


def case_async_copy(s: Setup) -> str | None:
    stream = s.stream()
    values = [float(-i) for i in range(N)]
    ptr = s.alloc(4 * N)
    src = s.ffi.new("float[]", values)
    out = s.ffi.new("float[]", N)
    s.d.call("cuMemcpyHtoDAsync", ptr, src, 4 * N, stream)
    s.d.call("cuMemcpyDtoHAsync", out, ptr, 4 * N, stream)
    s.d.call("cuStreamSynchronize", stream)
    _expect(list(out) == values, "async round trip differs")
    return None


def case_pinned_host(s: Setup) -> str | None:
    s.context()
    host = s.ffi.new("void **")
    s.d.call("cuMemAllocHost", host, 4 * N)
    _expect(host[0] != s.ffi.NULL, "cuMemAllocHost gave a null pointer")
    buf = s.ffi.cast("float *", host[0])
    for i in range(N):
        buf[i] = float(i)
    ptr = s.alloc(4 * N)
    s.d.call("cuMemcpyHtoD", ptr, buf, 4 * N)
    _expect(s.download_floats(ptr, N) == [float(i) for i in range(N)], "copy from pinned memory differs")
    s.d.call("cuMemFreeHost", host[0])
    return None


def case_host_register(s: Setup) -> str | None:
    s.context()
    buf = s.ffi.new("char[]", 1 << 16)
    s.d.call("cuMemHostRegister", buf, 1 << 16, 0)
    s.d.call("cuMemHostUnregister", buf)
    return None


def case_alloc_managed(s: Setup) -> str | None:
    s.context()
    ptr = s.ffi.new("CUdeviceptr *")
    s.d.call("cuMemAllocManaged", ptr, 4 * N, CU_MEM_ATTACH_GLOBAL)
    s.d.call("cuMemFree", ptr[0])
    return None


def case_address_range(s: Setup) -> str | None:
    ptr = s.alloc(4096)
    base = s.ffi.new("CUdeviceptr *")
    size = s.ffi.new("size_t *")
    s.d.call("cuMemGetAddressRange", base, size, ptr + 16)
    _expect(base[0] <= ptr + 16, "base above the queried address")
    return None


# --- streams and events --------------------------------------------------------------------------


def case_stream_create(s: Setup) -> str | None:
    s.context()
    st = s.ffi.new("CUstream *")
    s.d.call("cuStreamCreate", st, CU_STREAM_NON_BLOCKING)
    s.d.call("cuStreamDestroy", st[0])
    return None


def case_stream_sync_query(s: Setup) -> str | None:
    stream = s.stream()
    s.d.call("cuStreamSynchronize", stream)
    s.d.call("cuStreamQuery", stream)
    return None


def case_stream_priority(s: Setup) -> str:
    s.context()
    least, greatest = s.ffi.new("int *"), s.ffi.new("int *")
    s.d.call("cuCtxGetStreamPriorityRange", least, greatest)
    st = s.ffi.new("CUstream *")
    s.d.call("cuStreamCreateWithPriority", st, CU_STREAM_NON_BLOCKING, greatest[0])
    s.d.call("cuStreamDestroy", st[0])
    return f"priorities {least[0]}..{greatest[0]}"


def case_event_record(s: Setup) -> str | None:
    stream = s.stream()
    ev = s.ffi.new("CUevent *")
    s.d.call("cuEventCreate", ev, CU_EVENT_DEFAULT)
    s.d.call("cuEventRecord", ev[0], stream)
    s.d.call("cuEventSynchronize", ev[0])
    s.d.call("cuEventQuery", ev[0])
    s.d.call("cuEventDestroy", ev[0])
    return None


def case_event_timing(s: Setup) -> str:
    stream = s.stream()
    start, stop = s.ffi.new("CUevent *"), s.ffi.new("CUevent *")
    s.d.call("cuEventCreate", start, CU_EVENT_DEFAULT)
    s.d.call("cuEventCreate", stop, CU_EVENT_DEFAULT)
    s.d.call("cuEventRecord", start[0], stream)
    ptr = s.alloc(4 * N)
    s.d.call("cuMemsetD32", ptr, 0, N)
    s.d.call("cuEventRecord", stop[0], stream)
    s.d.call("cuEventSynchronize", stop[0])
    ms = s.ffi.new("float *")
    s.d.call("cuEventElapsedTime", ms, start[0], stop[0])
    _expect(ms[0] >= 0.0, f"negative elapsed time {ms[0]}")
    return f"{ms[0]:.3f} ms"


# --- modules and kernels -------------------------------------------------------------------------


def case_module_load(s: Setup) -> str | None:
    s.module()
    return None


def case_module_function(s: Setup) -> str | None:
    s.function()
    return None


def case_launch_kernel(s: Setup) -> str | None:
    a_vals = [float(i) for i in range(N)]
    b_vals = [float(2 * i) + 0.25 for i in range(N)]
    a, b = s.upload_floats(a_vals), s.upload_floats(b_vals)
    c = s.alloc(4 * N)
    s.launch_vadd(s.ffi.NULL, a, b, c, N)
    s.d.call("cuCtxSynchronize")
    got = s.download_floats(c, N)
    bad = [i for i in range(N) if got[i] != a_vals[i] + b_vals[i]]
    _expect(not bad, f"{len(bad)} of {N} results wrong (first at index {bad[0] if bad else 0})")
    return f"vadd over {N} floats checked"


def case_func_attribute(s: Setup) -> str:
    v = s.ffi.new("int *")
    s.d.call("cuFuncGetAttribute", v, 0, s.function())  # CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    _expect(v[0] > 0, "max threads per block 0")
    return f"max threads per block {v[0]}"


# --- occupancy -----------------------------------------------------------------------------------


def case_occupancy_blocks(s: Setup) -> str:
    n = s.ffi.new("int *")
    s.d.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", n, s.function(), 256, 0)
    return f"{n[0]} blocks of 256 per SM"


def case_occupancy_block_size(s: Setup) -> str:
    grid, block = s.ffi.new("int *"), s.ffi.new("int *")
    s.d.call("cuOccupancyMaxPotentialBlockSize", grid, block, s.function(), s.ffi.NULL, 0, 0)
    _expect(block[0] > 0, "block size 0")
    return f"min grid {grid[0]}, block {block[0]}"


# --- graphs --------------------------------------------------------------------------------------


def case_graph_capture(s: Setup) -> str | None:
    stream = s.stream()
    a_vals = [1.0] * N
    a = s.upload_floats(a_vals)
    c = s.alloc(4 * N)
    s.d.call("cuStreamBeginCapture", stream, CU_STREAM_CAPTURE_MODE_GLOBAL)
    s.launch_vadd(stream, a, a, c, N)
    graph = s.ffi.new("CUgraph *")
    s.d.call("cuStreamEndCapture", stream, graph)
    exe = s.ffi.new("CUgraphExec *")
    s.d.call("cuGraphInstantiateWithFlags", exe, graph[0], 0)
    s.d.call("cuGraphLaunch", exe[0], stream)
    s.d.call("cuStreamSynchronize", stream)
    _expect(s.download_floats(c, N) == [2.0] * N, "graph replay gave wrong results")
    s.d.call("cuGraphExecDestroy", exe[0])
    s.d.call("cuGraphDestroy", graph[0])
    return None


# --- memory pools --------------------------------------------------------------------------------


def case_default_pool(s: Setup) -> str | None:
    s.context()
    pool = s.ffi.new("CUmemoryPool *")
    s.d.call("cuDeviceGetDefaultMemPool", pool, s.device())
    _expect(pool[0] != s.ffi.NULL, "null default pool")
    return None


def case_alloc_async(s: Setup) -> str | None:
    stream = s.stream()
    ptr = s.ffi.new("CUdeviceptr *")
    s.d.call("cuMemAllocAsync", ptr, 4 * N, stream)
    # the allocation is usable outside its (non-blocking) stream once the stream has reached it
    s.d.call("cuStreamSynchronize", stream)
    _expect(ptr[0] != 0, "cuMemAllocAsync gave a null pointer")
    pattern = struct.unpack("<I", struct.pack("<f", -1.5))[0]
    s.d.call("cuMemsetD32", ptr[0], pattern, N)
    _expect(s.download_floats(ptr[0], N) == [-1.5] * N, "memory from the pool does not hold what was set")
    s.d.call("cuMemFreeAsync", ptr[0], stream)
    s.d.call("cuStreamSynchronize", stream)
    return None


# --- peers and errors ----------------------------------------------------------------------------


def case_peer_access(s: Setup) -> str:
    dev = s.device()
    n = s.ffi.new("int *")
    s.d.call("cuDeviceGetCount", n)
    peer = 1 if n[0] > 1 else dev
    can = s.ffi.new("int *")
    s.d.call("cuDeviceCanAccessPeer", can, dev, peer)
    return f"device {dev} -> {peer}: {'yes' if can[0] else 'no'}"


def case_error_name(s: Setup) -> str:
    text = s.ffi.new("const char **")
    s.d.call("cuGetErrorName", CUDA_ERROR_NOT_SUPPORTED, text)
    name = s.ffi.string(text[0]).decode() if text[0] != s.ffi.NULL else ""
    _expect(name == "CUDA_ERROR_NOT_SUPPORTED", f"801 is named {name!r}")
    return name


def case_error_string(s: Setup) -> str:
    text = s.ffi.new("const char **")
    s.d.call("cuGetErrorString", CUDA_ERROR_NOT_SUPPORTED, text)
    _expect(text[0] != s.ffi.NULL, "no description for 801")
    return s.ffi.string(text[0]).decode(errors="replace")


CATALOGUE: tuple[Case, ...] = (
    Case("init.cuInit", "init", "cuInit(0)", case_init),
    Case("init.driver_version", "init", "driver version", case_driver_version),
    Case("device.count", "device", "device count", case_device_count, ("init.cuInit",)),
    Case("device.get", "device", "device handle", case_device_get, ("init.cuInit",)),
    Case("device.name", "device", "device name", case_device_name, ("device.get",)),
    Case("device.attributes", "device", "device attributes", case_device_attributes, ("device.get",)),
    Case("device.uuid", "device", "device UUID", case_device_uuid, ("device.get",)),
    Case("device.total_mem", "device", "device memory", case_device_total_mem, ("device.get",)),
    Case(
        "context.primary",
        "context",
        "primary context retain + set current",
        case_primary_context,
        ("device.get",),
    ),
    Case(
        "context.primary_state", "context", "primary context state", case_primary_state, ("context.primary",)
    ),
    Case(
        "context.create_destroy", "context", "context create / destroy", case_context_create, ("device.get",)
    ),
    Case("context.push_pop", "context", "context push / pop", case_push_pop, ("context.primary",)),
    Case("context.synchronize", "context", "context synchronize", case_ctx_synchronize, ("context.primary",)),
    Case("context.mem_info", "context", "free / total memory", case_mem_info, ("context.primary",)),
    Case("memory.alloc_free", "memory", "device alloc / free", case_alloc_free, ("context.primary",)),
    Case(
        "memory.copy_roundtrip",
        "memory",
        "copy host -> device -> host",
        case_copy_roundtrip,
        ("memory.alloc_free",),
    ),
    Case("memory.copy_dtod", "memory", "copy device -> device", case_copy_dtod, ("memory.copy_roundtrip",)),
    Case("memory.memset_d32", "memory", "memset 32-bit", case_memset_d32, ("memory.copy_roundtrip",)),
    Case("memory.memset_d8", "memory", "memset 8-bit", case_memset_d8, ("memory.copy_roundtrip",)),
    Case("memory.pinned_host", "memory", "pinned host memory", case_pinned_host, ("memory.copy_roundtrip",)),
    Case("memory.host_register", "memory", "host memory register", case_host_register, ("context.primary",)),
    Case("memory.managed", "memory", "managed memory", case_alloc_managed, ("context.primary",)),
    Case(
        "memory.address_range",
        "memory",
        "address range of a pointer",
        case_address_range,
        ("memory.alloc_free",),
    ),
    Case(
        "stream.create_destroy", "stream", "stream create / destroy", case_stream_create, ("context.primary",)
    ),
    Case(
        "stream.sync_query",
        "stream",
        "stream synchronize / query",
        case_stream_sync_query,
        ("stream.create_destroy",),
    ),
    Case("stream.priority", "stream", "stream priorities", case_stream_priority, ("stream.create_destroy",)),
    Case(
        "memory.async_copy",
        "memory",
        "async copies on a stream",
        case_async_copy,
        ("memory.copy_roundtrip", "stream.create_destroy"),
    ),
    Case(
        "event.record_sync",
        "event",
        "event record / synchronize",
        case_event_record,
        ("stream.create_destroy",),
    ),
    Case("event.elapsed_time", "event", "event timing", case_event_timing, ("event.record_sync",)),
    Case("module.load_ptx", "module", "module from PTX", case_module_load, ("context.primary",)),
    Case("module.get_function", "module", "kernel lookup", case_module_function, ("module.load_ptx",)),
    Case(
        "module.launch_kernel",
        "module",
        "cuLaunchKernel vadd, results checked",
        case_launch_kernel,
        ("module.get_function", "memory.copy_roundtrip"),
    ),
    Case(
        "module.func_attribute", "module", "kernel attributes", case_func_attribute, ("module.get_function",)
    ),
    Case(
        "occupancy.active_blocks",
        "occupancy",
        "max active blocks per SM",
        case_occupancy_blocks,
        ("module.get_function",),
    ),
    Case(
        "occupancy.block_size",
        "occupancy",
        "max potential block size",
        case_occupancy_block_size,
        ("module.get_function",),
    ),
    Case(
        "graph.capture_launch",
        "graph",
        "stream capture -> graph launch",
        case_graph_capture,
        ("module.launch_kernel", "stream.create_destroy"),
    ),
    Case("mempool.default", "mempool", "default memory pool", case_default_pool, ("context.primary",)),
    Case(
        "mempool.alloc_async",
        "mempool",
        "stream-ordered alloc / free",
        case_alloc_async,
        ("mempool.default", "stream.create_destroy"),
    ),
    Case("peer.can_access", "peer", "peer access query", case_peer_access, ("device.count",)),
    Case("error.name", "error", "error name lookup", case_error_name),
    Case("error.string", "error", "error description lookup", case_error_string),
)
CASES_BY_ID = {c.id: c for c in CATALOGUE}
