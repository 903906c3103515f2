"""Modules (PTX in memory, from a file, with JIT options, through the linker and the library API),
globals, functions and their attributes, NVIDIA binary refusal, launches and occupancy."""

from __future__ import annotations

from typing import Any

from zluda_runner.probe.cases.base import PTX_FILE, Case, N, Setup, collector, expect

CASES: list[Case] = []
module = collector(CASES, "module")
function = collector(CASES, "function")
launch = collector(CASES, "launch")
occupancy = collector(CASES, "occupancy")
CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 3, 4
CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 5, 6
CU_JIT_OPTIMIZATION_LEVEL = 7
CU_JIT_INPUT_PTX = 1
CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2
# An ELF header for NVIDIA machine code (e_machine 190, EM_CUDA) and nothing else: what a cubin
# starts with. A driver that cannot run SASS must refuse it cleanly, not crash.
CUBIN_HEADER = (
    b"\x7fELF\x02\x01\x33\x07"
    + bytes(8)
    + (2).to_bytes(2, "little")
    + (190).to_bytes(2, "little")
    + (1).to_bytes(4, "little")
    + bytes(40)
)


def _jit_options(s: Setup) -> tuple[Any, Any, Any]:
    size = 4096
    info, err = s.ffi.new("char[]", size), s.ffi.new("char[]", size)
    keys = s.ffi.new(
        "int[]",
        [
            CU_JIT_INFO_LOG_BUFFER,
            CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            CU_JIT_ERROR_LOG_BUFFER,
            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            CU_JIT_OPTIMIZATION_LEVEL,
        ],
    )
    values = s.ffi.new(
        "void *[]",
        [
            s.ffi.cast("void *", info),
            s.ffi.cast("void *", size),
            s.ffi.cast("void *", err),
            s.ffi.cast("void *", size),
            s.ffi.cast("void *", 3),
        ],
    )
    s.keep += [info, err]
    return keys, values, err


@module("load_ptx", "module from PTX in memory", "context.primary")
def case_module_load(s: Setup) -> None:
    s.module()


@module("load_file", "module from a PTX file, unload", "context.primary")
def case_module_load_file(s: Setup) -> None:
    s.context()
    mod = s.ffi.new("CUmodule *")
    s.d.call("cuModuleLoad", mod, str(PTX_FILE).encode())
    s.d.call("cuModuleUnload", mod[0])


@module("load_ptx_options", "module from PTX with JIT options (logs, optimisation level)", "context.primary")
def case_module_load_ex(s: Setup) -> str:
    s.context()
    keys, values, err = _jit_options(s)
    mod = s.ffi.new("CUmodule *")
    s.d.call("cuModuleLoadDataEx", mod, s.ptx(), 5, keys, values)
    s.d.call("cuModuleUnload", mod[0])
    log = s.ffi.string(err).decode(errors="replace").strip()
    return f"error log: {log[:200]}" if log else "empty error log"


@module("cubin_refusal", "NVIDIA machine code (cubin / fatbin) refused cleanly", "context.primary")
def case_cubin_refusal(s: Setup) -> str:
    s.context()
    image = s.ffi.new("char[]", CUBIN_HEADER)
    mod = s.ffi.new("CUmodule *")
    rc = s.d.try_call("cuModuleLoadData", mod, image)
    rc_fat = s.d.try_call("cuModuleLoadFatBinary", mod, image)
    expect(rc != 0 and rc_fat != 0, "an empty cubin was accepted as a module")
    names = {s.d.calls[-2].result_name, s.d.calls[-1].result_name}
    return "finding: binary images refused with " + " / ".join(sorted(names)) + "; only PTX can run"


@module("global", "module global: address, size, value", "module.load_ptx")
def case_module_global(s: Setup) -> str:
    ptr, size = s.ffi.new("CUdeviceptr *"), s.ffi.new("size_t *")
    s.d.call("cuModuleGetGlobal", ptr, size, s.module(), b"probe_global")
    expect(size[0] == 4, f"size {size[0]}, not 4")
    value = int.from_bytes(s.download_bytes(ptr[0], 4), "little")
    expect(value == 7, f"probe_global reads {value}, not 7")
    return "probe_global = 7"


@module("enumerate", "function count and enumeration, loading mode", "module.load_ptx")
def case_module_enumerate(s: Setup) -> str:
    count = s.ffi.new("unsigned int *")
    s.d.call("cuModuleGetFunctionCount", count, s.module())
    fns = s.ffi.new("CUfunction[]", max(count[0], 1))
    s.d.call("cuModuleEnumerateFunctions", fns, count[0], s.module())
    mode = s.ffi.new("int *")
    s.d.call("cuModuleGetLoadingMode", mode)
    expect(count[0] == 1, f"{count[0]} functions, the module has 1")
    return f"loading mode {mode[0]}"


@module("linker", "link PTX with the JIT linker, load the result", "context.primary")
def case_linker(s: Setup) -> str:
    s.context()
    state = s.ffi.new("CUlinkState *")
    s.d.call("cuLinkCreate", 0, s.ffi.NULL, s.ffi.NULL, state)
    ptx = s.ptx()
    s.d.call(
        "cuLinkAddData", state[0], CU_JIT_INPUT_PTX, ptx, len(ptx), b"vadd.ptx", 0, s.ffi.NULL, s.ffi.NULL
    )
    image, size = s.ffi.new("void **"), s.ffi.new("size_t *")
    s.d.call("cuLinkComplete", state[0], image, size)
    mod = s.ffi.new("CUmodule *")
    s.d.call("cuModuleLoadData", mod, image[0])
    s.d.call("cuLinkDestroy", state[0])
    s.d.call("cuModuleUnload", mod[0])
    return f"linked image of {size[0]} bytes"


@module("library", "library API: load, kernel, function, module, unload", "context.primary")
def case_library(s: Setup) -> None:
    s.context()
    lib = s.ffi.new("CUlibrary *")
    null = s.ffi.NULL
    s.d.call("cuLibraryLoadData", lib, s.ptx(), null, null, 0, null, null, 0)
    kernel = s.ffi.new("CUkernel *")
    s.d.call("cuLibraryGetKernel", kernel, lib[0], b"vadd")
    fn = s.ffi.new("CUfunction *")
    s.d.call("cuKernelGetFunction", fn, kernel[0])
    v = s.ffi.new("int *")
    s.d.call("cuKernelGetAttribute", v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel[0], s.device())
    mod = s.ffi.new("CUmodule *")
    s.d.call("cuLibraryGetModule", mod, lib[0])
    s.d.call("cuLibraryUnload", lib[0])
    expect(v[0] > 0, "kernel max threads per block 0")


@function("get", "kernel lookup", "module.load_ptx")
def case_module_function(s: Setup) -> None:
    s.function()


@function("attribute", "kernel attributes", "function.get")
def case_func_attribute(s: Setup) -> str:
    v = s.ffi.new("int *")
    s.d.call("cuFuncGetAttribute", v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, s.function())
    expect(v[0] > 0, "max threads per block 0")
    return f"max threads per block {v[0]}"


@function("configure", "set attribute, cache and shared-memory configuration", "function.get")
def case_func_configure(s: Setup) -> None:
    fn = s.function()
    s.d.call("cuFuncSetAttribute", fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0)
    s.d.call("cuFuncSetCacheConfig", fn, 0)
    s.d.call("cuFuncSetSharedMemConfig", fn, 0)


@function("introspect", "name, module and parameter layout of a kernel", "function.get")
def case_func_introspect(s: Setup) -> str:
    fn = s.function()
    name = s.ffi.new("const char **")
    s.d.call("cuFuncGetName", name, fn)
    mod = s.ffi.new("CUmodule *")
    s.d.call("cuFuncGetModule", mod, fn)
    offset, size = s.ffi.new("size_t *"), s.ffi.new("size_t *")
    s.d.call("cuFuncGetParamInfo", fn, 3, offset, size)
    text = s.ffi.string(name[0]).decode(errors="replace") if name[0] != s.ffi.NULL else ""
    expect(text == "vadd", f"kernel is named {text!r}")
    expect((offset[0], size[0]) == (24, 4), f"parameter 3 at {offset[0]}, {size[0]} bytes (want 24, 4)")
    return "vadd(a, b, c, n): n at offset 24"


def _check_vadd(s: Setup, c: int, want: list[float]) -> None:
    got = s.download_floats(c, N)
    bad = [i for i in range(N) if got[i] != want[i]]
    expect(not bad, f"{len(bad)} of {N} results wrong (first at index {bad[0] if bad else 0})")


@launch("kernel", "cuLaunchKernel vadd, results checked", "function.get", "memory.copy_roundtrip")
def case_launch_kernel(s: Setup) -> str:
    a, b, c, want = s.vadd_inputs()
    s.launch_vadd(s.ffi.NULL, a, b, c, N)
    s.d.call("cuCtxSynchronize")
    _check_vadd(s, c, want)
    return f"vadd over {N} floats checked"


@launch("cooperative", "cooperative launch, results checked", "function.get", "memory.copy_roundtrip")
def case_launch_cooperative(s: Setup) -> None:
    a, b, c, want = s.vadd_inputs()
    params = s.vadd_params(a, b, c, N)
    s.d.call("cuLaunchCooperativeKernel", s.function(), N // 256, 1, 1, 256, 1, 1, 0, s.ffi.NULL, params)
    s.d.call("cuCtxSynchronize")
    _check_vadd(s, c, want)


@launch("ex", "cuLaunchKernelEx with the cooperative attribute", "function.get", "memory.copy_roundtrip")
def case_launch_ex(s: Setup) -> None:
    a, b, c, want = s.vadd_inputs()
    attr = s.ffi.new("CUlaunchAttribute *")
    attr.id, attr.value.cooperative = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, 1
    config = s.ffi.new("CUlaunchConfig *")
    config.gridDimX, config.gridDimY, config.gridDimZ = N // 256, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = 256, 1, 1
    config.hStream, config.attrs, config.numAttrs = s.ffi.NULL, attr, 1
    s.d.call("cuLaunchKernelEx", config, s.function(), s.vadd_params(a, b, c, N), s.ffi.NULL)
    s.d.call("cuCtxSynchronize")
    _check_vadd(s, c, want)


@occupancy("active_blocks", "max active blocks per SM", "function.get")
def case_occupancy_blocks(s: Setup) -> str:
    n = s.ffi.new("int *")
    s.d.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", n, s.function(), 256, 0)
    return f"{n[0]} blocks of 256 per SM"


@occupancy("active_blocks_flags", "max active blocks per SM, with flags", "function.get")
def case_occupancy_blocks_flags(s: Setup) -> str:
    n = s.ffi.new("int *")
    s.d.call("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", n, s.function(), 256, 0, 0)
    return f"{n[0]} blocks of 256 per SM"


@occupancy("block_size", "max potential block size (with and without flags)", "function.get")
def case_occupancy_block_size(s: Setup) -> str:
    grid, block = s.ffi.new("int *"), s.ffi.new("int *")
    s.d.call("cuOccupancyMaxPotentialBlockSize", grid, block, s.function(), s.ffi.NULL, 0, 0)
    s.d.call("cuOccupancyMaxPotentialBlockSizeWithFlags", grid, block, s.function(), s.ffi.NULL, 0, 0, 0)
    expect(block[0] > 0, "block size 0")
    return f"min grid {grid[0]}, block {block[0]}"


@occupancy("dynamic_smem", "dynamic shared memory available per block", "function.get")
def case_occupancy_smem(s: Setup) -> str:
    size = s.ffi.new("size_t *")
    s.d.call("cuOccupancyAvailableDynamicSMemPerBlock", size, s.function(), 1, 256)
    return f"{size[0]} bytes"
