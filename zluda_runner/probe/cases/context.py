"""Contexts: primary context, create / destroy, push / pop, flags, limits, cache configuration."""

from __future__ import annotations

from zluda_runner.probe.cases.base import Case, Setup, collector, expect

CASES: list[Case] = []
case = collector(CASES, "context")
CU_LIMIT_STACK_SIZE = 0
CU_FUNC_CACHE_PREFER_NONE = 0
CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE = 0
CU_CTX_SCHED_AUTO = 0


@case("primary", "primary context retain + set current", "device.get")
def case_primary_context(s: Setup) -> None:
    ctx = s.context()
    cur = s.ffi.new("CUcontext *")
    s.d.call("cuCtxGetCurrent", cur)
    expect(cur[0] == ctx, "cuCtxGetCurrent does not return the context just set")


@case("primary_state", "primary context state", "context.primary")
def case_primary_state(s: Setup) -> str:
    s.context()
    flags, active = s.ffi.new("unsigned int *"), s.ffi.new("int *")
    s.d.call("cuDevicePrimaryCtxGetState", s.device(), flags, active)
    expect(active[0] == 1, "primary context retained but reported inactive")
    return f"flags {flags[0]}, active {active[0]}"


@case("primary_flags", "primary context set flags", "context.primary")
def case_primary_flags(s: Setup) -> None:
    s.context()
    s.d.call("cuDevicePrimaryCtxSetFlags", s.device(), CU_CTX_SCHED_AUTO)


@case("primary_release_reset", "primary context retain / release / reset on another device", "device.count")
def case_primary_release(s: Setup) -> str:
    dev = 1 if s.device_count() > 1 else s.device()
    ctx = s.ffi.new("CUcontext *")
    s.d.call("cuDevicePrimaryCtxRetain", ctx, dev)
    s.d.call("cuDevicePrimaryCtxRelease", dev)
    if dev != s.device():  # resetting the context other cases use would pull it from under them
        s.d.call("cuDevicePrimaryCtxReset", dev)
    s.restore_context()
    return f"device {dev}"


@case("create_destroy", "context create / destroy", "device.get")
def case_context_create(s: Setup) -> None:
    dev = s.device()
    ctx = s.ffi.new("CUcontext *")
    s.d.call("cuCtxCreate", ctx, 0, dev)
    got = s.ffi.new("CUdevice *")
    s.d.call("cuCtxGetDevice", got)
    s.d.call("cuCtxDestroy", ctx[0])
    s.restore_context()  # later cases must not depend on how the driver pops a destroyed context
    expect(got[0] == dev, "new context is on another device")


@case("push_pop", "context push / pop", "context.primary")
def case_push_pop(s: Setup) -> None:
    ctx = s.context()
    s.d.call("cuCtxPushCurrent", ctx)
    popped = s.ffi.new("CUcontext *")
    s.d.call("cuCtxPopCurrent", popped)
    expect(popped[0] == ctx, "popped another context than pushed")
    s.d.call("cuCtxSetCurrent", ctx)


@case("synchronize", "context synchronize", "context.primary")
def case_ctx_synchronize(s: Setup) -> None:
    s.context()
    s.d.call("cuCtxSynchronize")


@case("mem_info", "free / total memory", "context.primary")
def case_mem_info(s: Setup) -> str:
    s.context()
    free_b, total = s.ffi.new("size_t *"), s.ffi.new("size_t *")
    s.d.call("cuMemGetInfo", free_b, total)
    expect(0 < free_b[0] <= total[0], f"free {free_b[0]} / total {total[0]} implausible")
    return f"{free_b[0] / 2**30:.1f} of {total[0] / 2**30:.1f} GiB free"


@case("flags", "context get / set flags", "context.primary")
def case_flags(s: Setup) -> str:
    s.context()
    flags = s.ffi.new("unsigned int *")
    s.d.call("cuCtxGetFlags", flags)
    s.d.call("cuCtxSetFlags", flags[0])
    return f"flags {flags[0]:#x}"


@case("api_version", "context API version", "context.primary")
def case_api_version(s: Setup) -> str:
    v = s.ffi.new("unsigned int *")
    s.d.call("cuCtxGetApiVersion", s.context(), v)
    expect(v[0] > 0, "API version 0")
    return f"API version {v[0]}"


@case("id", "context id", "context.primary")
def case_ctx_id(s: Setup) -> str:
    v = s.ffi.new("unsigned long long *")
    s.d.call("cuCtxGetId", s.context(), v)
    return f"id {v[0]}"


@case("limits", "stack-size limit get / set", "context.primary")
def case_limits(s: Setup) -> str:
    s.context()
    v = s.ffi.new("size_t *")
    s.d.call("cuCtxGetLimit", v, CU_LIMIT_STACK_SIZE)
    s.d.call("cuCtxSetLimit", CU_LIMIT_STACK_SIZE, v[0])
    return f"stack size {v[0]} bytes"


@case("cache_config", "cache and shared-memory configuration", "context.primary")
def case_cache_config(s: Setup) -> None:
    s.context()
    v = s.ffi.new("int *")
    s.d.call("cuCtxGetCacheConfig", v)
    s.d.call("cuCtxSetCacheConfig", CU_FUNC_CACHE_PREFER_NONE)
    s.d.call("cuCtxGetSharedMemConfig", v)
    s.d.call("cuCtxSetSharedMemConfig", CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE)


@case("reset_l2", "reset persisting L2 cache lines", "context.primary")
def case_reset_l2(s: Setup) -> None:
    s.context()
    s.d.call("cuCtxResetPersistingL2Cache")


@case("stream_priority_range", "stream priority range", "context.primary")
def case_priority_range(s: Setup) -> str:
    s.context()
    least, greatest = s.ffi.new("int *"), s.ffi.new("int *")
    s.d.call("cuCtxGetStreamPriorityRange", least, greatest)
    return f"priorities {least[0]}..{greatest[0]}"
