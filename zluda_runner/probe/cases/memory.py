"""Linear device memory, host memory, pointer attributes, unified memory, memset variants."""

from __future__ import annotations

from zluda_runner.probe.cases.base import (
    CU_MEM_ATTACH_GLOBAL,
    Case,
    N,
    Setup,
    collector,
    expect,
    float_bits,
)

CASES: list[Case] = []
case = collector(CASES, "memory")
memset = collector(CASES, "memset")
CU_MEMHOSTALLOC_DEVICEMAP = 2
CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3
CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6
CU_MEMORYTYPE_DEVICE = 2
CU_MEM_ADVISE_SET_READ_MOSTLY = 1
CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY = 1
CU_DEVICE_CPU = -1


@case("alloc_free", "device alloc / free", "context.primary")
def case_alloc_free(s: Setup) -> None:
    ptr = s.alloc(1 << 20)
    expect(ptr != 0, "cuMemAlloc gave a null pointer")
    s.d.call("cuMemFree", ptr)


@case("copy_roundtrip", "copy host -> device -> host", "memory.alloc_free")
def case_copy_roundtrip(s: Setup) -> None:
    values = [float(i) for i in range(N)]
    ptr = s.upload_floats(values)
    expect(s.download_floats(ptr, N) == values, "data read back differs from data written")
    s.d.call("cuMemFree", ptr)


@case("copy_dtod", "copy device -> device", "memory.copy_roundtrip")
def case_copy_dtod(s: Setup) -> None:
    values = [float(i) * 0.5 for i in range(N)]
    src = s.upload_floats(values)
    dst = s.alloc(4 * N)
    s.d.call("cuMemcpyDtoD", dst, src, 4 * N)
    expect(s.download_floats(dst, N) == values, "device-to-device copy differs")


@case("copy_unified", "cuMemcpy / cuMemcpyAsync (unified addressing)", "memory.copy_roundtrip")
def case_copy_unified(s: Setup) -> str | None:
    values = [float(i) + 0.5 for i in range(N)]
    src = s.upload_floats(values)
    mid, dst = s.alloc(4 * N), s.alloc(4 * N)
    stream = s.stream_or_default()
    s.d.call("cuMemcpy", mid, src, 4 * N)
    s.d.call("cuMemcpyAsync", dst, mid, 4 * N, stream)
    s.d.call("cuStreamSynchronize", stream)
    expect(s.download_floats(dst, N) == values, "unified copies differ")
    return None


@case("async_copy", "async copies H->D, D->D, D->H on a stream", "memory.copy_roundtrip")
def case_async_copy(s: Setup) -> None:
    stream = s.stream_or_default()
    values = [float(-i) for i in range(N)]
    ptr, ptr2 = s.alloc(4 * N), s.alloc(4 * N)
    src = s.ffi.new("float[]", values)
    out = s.ffi.new("float[]", N)
    s.d.call("cuMemcpyHtoDAsync", ptr, src, 4 * N, stream)
    s.d.call("cuMemcpyDtoDAsync", ptr2, ptr, 4 * N, stream)
    s.d.call("cuMemcpyDtoHAsync", out, ptr2, 4 * N, stream)
    s.d.call("cuStreamSynchronize", stream)
    expect(list(out) == values, "async round trip differs")


@case("peer_copy", "copy between the contexts of two devices", "memory.copy_roundtrip", "device.count")
def case_peer_copy(s: Setup) -> str:
    values = [float(i) * 3 for i in range(N)]
    ctx = s.context()
    src = s.upload_floats(values)
    dst = s.alloc(4 * N)
    stream = s.stream_or_default()
    s.d.call("cuMemcpyPeer", dst, ctx, src, ctx, 4 * N)
    s.d.call("cuMemcpyPeerAsync", dst, ctx, src, ctx, 4 * N, stream)
    s.d.call("cuStreamSynchronize", stream)
    expect(s.download_floats(dst, N) == values, "peer copy differs")
    return "within device 0's context (the calls a peer copy makes)"


@case("pinned_host", "pinned host memory", "memory.copy_roundtrip")
def case_pinned_host(s: Setup) -> None:
    s.context()
    host = s.ffi.new("void **")
    s.d.call("cuMemAllocHost", host, 4 * N)
    expect(host[0] != s.ffi.NULL, "cuMemAllocHost gave a null pointer")
    buf = s.ffi.cast("float *", host[0])
    for i in range(N):
        buf[i] = float(i)
    ptr = s.alloc(4 * N)
    s.d.call("cuMemcpyHtoD", ptr, buf, 4 * N)
    expect(s.download_floats(ptr, N) == [float(i) for i in range(N)], "copy from pinned memory differs")
    s.d.call("cuMemFreeHost", host[0])


@case("host_alloc_mapped", "mapped host memory: flags, device pointer", "context.primary")
def case_host_alloc(s: Setup) -> str:
    s.context()
    host = s.ffi.new("void **")
    s.d.call("cuMemHostAlloc", host, 4096, CU_MEMHOSTALLOC_DEVICEMAP)
    flags = s.ffi.new("unsigned int *")
    s.d.call("cuMemHostGetFlags", flags, host[0])
    dptr = s.ffi.new("CUdeviceptr *")
    s.d.call("cuMemHostGetDevicePointer", dptr, host[0], 0)
    s.d.call("cuMemFreeHost", host[0])
    expect(dptr[0] != 0, "mapped memory has a null device pointer")
    return f"flags {flags[0]:#x}"


@case("host_register", "host memory register", "context.primary")
def case_host_register(s: Setup) -> None:
    s.context()
    buf = s.ffi.new("char[]", 1 << 16)
    s.d.call("cuMemHostRegister", buf, 1 << 16, 0)
    s.d.call("cuMemHostUnregister", buf)


@case("managed", "managed memory, prefetch, advise, attach", "context.primary")
def case_alloc_managed(s: Setup) -> None:
    s.context()
    ptr = s.ffi.new("CUdeviceptr *")
    s.d.call("cuMemAllocManaged", ptr, 4 * N, CU_MEM_ATTACH_GLOBAL)
    stream = s.stream_or_default()
    s.d.call("cuMemAdvise", ptr[0], 4 * N, CU_MEM_ADVISE_SET_READ_MOSTLY, s.device())
    read_mostly = s.ffi.new("int *")
    s.d.call("cuMemRangeGetAttribute", read_mostly, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, ptr[0], 4 * N)
    s.d.call("cuMemPrefetchAsync", ptr[0], 4 * N, s.device(), stream)
    s.d.call("cuStreamAttachMemAsync", stream, ptr[0], 0, CU_MEM_ATTACH_GLOBAL)
    s.d.call("cuStreamSynchronize", stream)
    s.d.call("cuMemFree", ptr[0])


@case("address_range", "address range of a pointer", "memory.alloc_free")
def case_address_range(s: Setup) -> None:
    ptr = s.alloc(4096)
    base = s.ffi.new("CUdeviceptr *")
    size = s.ffi.new("size_t *")
    s.d.call("cuMemGetAddressRange", base, size, ptr + 16)
    expect(base[0] <= ptr + 16, "base above the queried address")


@case("pointer_attributes", "pointer attributes get / set", "memory.alloc_free")
def case_pointer_attributes(s: Setup) -> None:
    ptr = s.alloc(4096)
    kind = s.ffi.new("unsigned int *")
    s.d.call("cuPointerGetAttribute", kind, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr)
    expect(kind[0] == CU_MEMORYTYPE_DEVICE, f"memory type {kind[0]}, not device (2)")
    attrs = s.ffi.new("int[]", [CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER])
    kind2, dptr = s.ffi.new("unsigned int *"), s.ffi.new("CUdeviceptr *")
    data = s.ffi.new("void *[]", [s.ffi.cast("void *", kind2), s.ffi.cast("void *", dptr)])
    s.d.call("cuPointerGetAttributes", 2, attrs, data, ptr)
    expect(dptr[0] == ptr, "device pointer attribute differs from the pointer")
    one = s.ffi.new("int *", 1)
    s.d.call("cuPointerSetAttribute", one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr)


@case("pitched", "pitched allocation", "memory.alloc_free")
def case_pitched(s: Setup) -> str:
    s.context()
    ptr, pitch = s.ffi.new("CUdeviceptr *"), s.ffi.new("size_t *")
    s.d.call("cuMemAllocPitch", ptr, pitch, 100, 8, 4)
    expect(pitch[0] >= 100, f"pitch {pitch[0]} below the row width 100")
    s.d.call("cuMemFree", ptr[0])
    return f"pitch {pitch[0]} for 100-byte rows"


@memset("d8", "memset 8-bit", "memory.copy_roundtrip")
def case_memset_d8(s: Setup) -> None:
    ptr = s.alloc(N)
    s.d.call("cuMemsetD8", ptr, 0x5A, N)
    expect(s.download_bytes(ptr, N) == b"\x5a" * N, "cuMemsetD8 pattern not read back")


@memset("d16", "memset 16-bit", "memory.copy_roundtrip")
def case_memset_d16(s: Setup) -> None:
    ptr = s.alloc(2 * N)
    s.d.call("cuMemsetD16", ptr, 0x1234, N)
    expect(s.download_bytes(ptr, 2 * N) == b"\x34\x12" * N, "cuMemsetD16 pattern not read back")


@memset("d32", "memset 32-bit", "memory.copy_roundtrip")
def case_memset_d32(s: Setup) -> None:
    ptr = s.alloc(4 * N)
    s.d.call("cuMemsetD32", ptr, float_bits(2.5), N)
    expect(s.download_floats(ptr, N) == [2.5] * N, "cuMemsetD32 pattern not read back")


@memset("async", "memset 8/16/32-bit on a stream", "memory.copy_roundtrip")
def case_memset_async(s: Setup) -> None:
    stream = s.stream_or_default()
    ptr = s.alloc(4 * N)
    s.d.call("cuMemsetD8Async", ptr, 0x11, 4 * N, stream)
    s.d.call("cuMemsetD16Async", ptr, 0x2222, N, stream)
    s.d.call("cuMemsetD32Async", ptr + 2 * N, 0x33333333, N // 4, stream)
    s.d.call("cuStreamSynchronize", stream)
    want = b"\x22" * (2 * N) + b"\x33" * N + b"\x11" * N
    expect(s.download_bytes(ptr, 4 * N) == want, "async memsets not read back")


def _memset_2d(s: Setup, bits: int, on_stream: bool) -> None:
    pitch, width, height = 64, 8, 4  # width in elements
    size = bits // 8
    ptr = s.alloc(pitch * height)
    s.d.call("cuMemsetD8", ptr, 0, pitch * height)
    value = {8: 0x7F, 16: 0x7F7F, 32: 0x7F7F7F7F}[bits]
    name = f"cuMemsetD2D{bits}" + ("Async" if on_stream else "")
    args: list[object] = [ptr, pitch, value, width, height]
    stream = s.stream_or_default() if on_stream else None
    if on_stream:
        args.append(stream)
    s.d.call(name, *args)
    if on_stream:
        s.d.call("cuStreamSynchronize", stream)
    got = s.download_bytes(ptr, pitch * height)
    for row in range(height):
        line = got[row * pitch : (row + 1) * pitch]
        expect(
            line == b"\x7f" * (width * size) + b"\x00" * (pitch - width * size),
            f"row {row} of the 2D memset is wrong",
        )


@memset("d2d8", "2D memset 8-bit", "memory.copy_roundtrip")
def case_memset_2d8(s: Setup) -> None:
    _memset_2d(s, 8, False)


@memset("d2d16", "2D memset 16-bit", "memory.copy_roundtrip")
def case_memset_2d16(s: Setup) -> None:
    _memset_2d(s, 16, False)


@memset("d2d32", "2D memset 32-bit", "memory.copy_roundtrip")
def case_memset_2d32(s: Setup) -> None:
    _memset_2d(s, 32, False)


@memset("d2d_async", "2D memsets 8/16/32-bit on a stream", "memory.copy_roundtrip")
def case_memset_2d_async(s: Setup) -> None:
    for bits in (8, 16, 32):
        _memset_2d(s, bits, True)
