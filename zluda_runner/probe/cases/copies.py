"""2D and 3D copies (host, device, array), CUDA arrays."""

from __future__ import annotations

from typing import Any

from zluda_runner.probe.cases.base import (
    CU_AD_FORMAT_FLOAT,
    CU_MEMORYTYPE_ARRAY,
    CU_MEMORYTYPE_DEVICE,
    CU_MEMORYTYPE_HOST,
    Case,
    Setup,
    collector,
    expect,
)

CASES: list[Case] = []
case = collector(CASES, "copy")
array = collector(CASES, "array")
W, H, D = 16, 8, 4  # floats per row, rows, slices


def _rows(h: int = H, w: int = W, base: float = 0.0) -> list[float]:
    return [base + float(r * 100 + c) for r in range(h) for c in range(w)]


def _copy2d(s: Setup, name: str, *extra: Any) -> None:
    """Host rows -> pitched device buffer -> host rows, through ``name`` both ways."""
    values = _rows()
    host = s.ffi.new("float[]", values)
    back = s.ffi.new("float[]", W * H)
    ptr, pitch = s.ffi.new("CUdeviceptr *"), s.ffi.new("size_t *")
    s.context()
    s.d.call("cuMemAllocPitch", ptr, pitch, 4 * W, H, 4)
    up = s.ffi.new("CUDA_MEMCPY2D *")
    up.srcMemoryType, up.srcHost, up.srcPitch = CU_MEMORYTYPE_HOST, host, 4 * W
    up.dstMemoryType, up.dstDevice, up.dstPitch = CU_MEMORYTYPE_DEVICE, ptr[0], pitch[0]
    up.WidthInBytes, up.Height = 4 * W, H
    down = s.ffi.new("CUDA_MEMCPY2D *")
    down.srcMemoryType, down.srcDevice, down.srcPitch = CU_MEMORYTYPE_DEVICE, ptr[0], pitch[0]
    down.dstMemoryType, down.dstHost, down.dstPitch = CU_MEMORYTYPE_HOST, back, 4 * W
    down.WidthInBytes, down.Height = 4 * W, H
    s.d.call(name, up, *extra)
    s.d.call(name, down, *extra)
    if extra:
        s.d.call("cuStreamSynchronize", extra[0])
    expect(list(back) == values, f"{name} round trip through a pitched buffer differs")


@case("2d", "2D copy host <-> pitched device", "memory.pitched")
def case_copy_2d(s: Setup) -> None:
    _copy2d(s, "cuMemcpy2D")


@case("2d_unaligned", "2D copy, unaligned variant", "memory.pitched")
def case_copy_2d_unaligned(s: Setup) -> None:
    _copy2d(s, "cuMemcpy2DUnaligned")


@case("2d_async", "2D copy on a stream", "memory.pitched")
def case_copy_2d_async(s: Setup) -> None:
    _copy2d(s, "cuMemcpy2DAsync", s.stream_or_default())


def _copy3d(s: Setup, name: str, *extra: Any) -> None:
    values = _rows(H * D)
    host = s.ffi.new("float[]", values)
    back = s.ffi.new("float[]", W * H * D)
    dev = s.alloc(4 * W * H * D)
    up = s.ffi.new("CUDA_MEMCPY3D *")
    up.srcMemoryType, up.srcHost, up.srcPitch, up.srcHeight = CU_MEMORYTYPE_HOST, host, 4 * W, H
    up.dstMemoryType, up.dstDevice, up.dstPitch, up.dstHeight = CU_MEMORYTYPE_DEVICE, dev, 4 * W, H
    up.WidthInBytes, up.Height, up.Depth = 4 * W, H, D
    down = s.ffi.new("CUDA_MEMCPY3D *")
    down.srcMemoryType, down.srcDevice, down.srcPitch, down.srcHeight = CU_MEMORYTYPE_DEVICE, dev, 4 * W, H
    down.dstMemoryType, down.dstHost, down.dstPitch, down.dstHeight = CU_MEMORYTYPE_HOST, back, 4 * W, H
    down.WidthInBytes, down.Height, down.Depth = 4 * W, H, D
    s.d.call(name, up, *extra)
    s.d.call(name, down, *extra)
    if extra:
        s.d.call("cuStreamSynchronize", extra[0])
    expect(list(back) == values, f"{name} round trip differs")


@case("3d", "3D copy host <-> device", "memory.copy_roundtrip")
def case_copy_3d(s: Setup) -> None:
    _copy3d(s, "cuMemcpy3D")


@case("3d_async", "3D copy on a stream", "memory.copy_roundtrip")
def case_copy_3d_async(s: Setup) -> None:
    _copy3d(s, "cuMemcpy3DAsync", s.stream_or_default())


def new_array(s: Setup, width: int = W, height: int = H) -> Any:
    s.context()
    desc = s.ffi.new("CUDA_ARRAY_DESCRIPTOR *")
    desc.Width, desc.Height, desc.Format, desc.NumChannels = width, height, CU_AD_FORMAT_FLOAT, 1
    arr = s.ffi.new("CUarray *")
    s.d.call("cuArrayCreate", arr, desc)
    return arr[0]


@array("create_2d", "2D array create / describe / destroy", "context.primary")
def case_array_2d(s: Setup) -> None:
    arr = new_array(s)
    desc = s.ffi.new("CUDA_ARRAY_DESCRIPTOR *")
    s.d.call("cuArrayGetDescriptor", desc, arr)
    s.d.call("cuArrayDestroy", arr)
    expect((desc.Width, desc.Height, desc.Format) == (W, H, CU_AD_FORMAT_FLOAT), "descriptor differs")


@array("create_3d", "3D array create / describe / destroy", "context.primary")
def case_array_3d(s: Setup) -> None:
    s.context()
    desc = s.ffi.new("CUDA_ARRAY3D_DESCRIPTOR *")
    desc.Width, desc.Height, desc.Depth, desc.Format, desc.NumChannels = W, H, D, CU_AD_FORMAT_FLOAT, 1
    arr = s.ffi.new("CUarray *")
    s.d.call("cuArray3DCreate", arr, desc)
    got = s.ffi.new("CUDA_ARRAY3D_DESCRIPTOR *")
    s.d.call("cuArray3DGetDescriptor", got, arr[0])
    s.d.call("cuArrayDestroy", arr[0])
    expect((got.Width, got.Height, got.Depth) == (W, H, D), "3D descriptor differs")


@array("copy_host", "copy host <-> array (1D and 2D)", "array.create_2d")
def case_array_copy(s: Setup) -> None:
    values = _rows(1, W)
    arr = new_array(s, W, 0)
    src = s.ffi.new("float[]", values)
    back = s.ffi.new("float[]", W)
    s.d.call("cuMemcpyHtoA", arr, 0, src, 4 * W)
    s.d.call("cuMemcpyAtoH", back, arr, 0, 4 * W)
    expect(list(back) == values, "1D array round trip differs")
    s.d.call("cuArrayDestroy", arr)
    arr2 = new_array(s)
    rows = _rows()
    host = s.ffi.new("float[]", rows)
    out = s.ffi.new("float[]", W * H)
    up = s.ffi.new("CUDA_MEMCPY2D *")
    up.srcMemoryType, up.srcHost, up.srcPitch = CU_MEMORYTYPE_HOST, host, 4 * W
    up.dstMemoryType, up.dstArray = CU_MEMORYTYPE_ARRAY, arr2
    up.WidthInBytes, up.Height = 4 * W, H
    down = s.ffi.new("CUDA_MEMCPY2D *")
    down.srcMemoryType, down.srcArray = CU_MEMORYTYPE_ARRAY, arr2
    down.dstMemoryType, down.dstHost, down.dstPitch = CU_MEMORYTYPE_HOST, out, 4 * W
    down.WidthInBytes, down.Height = 4 * W, H
    s.d.call("cuMemcpy2D", up)
    s.d.call("cuMemcpy2D", down)
    s.d.call("cuArrayDestroy", arr2)
    expect(list(out) == rows, "2D array round trip differs")
