"""2D and 3D copies (host, device, array), CUDA arrays.

The strided copies are one table (:data:`COPIES`): each row is a driver call that copies rows of
:data:`W` floats host -> device and back, through a ``CUDA_MEMCPY2D`` or ``CUDA_MEMCPY3D`` made by
:func:`memcpy_desc`. A round trip alone cannot see a copy that lays rows out wrongly the same way in
both directions, so each case also reads the device buffer as it lies and checks every row at its
pitch.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
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
_SIDE_FIELD = {CU_MEMORYTYPE_HOST: "Host", CU_MEMORYTYPE_DEVICE: "Device", CU_MEMORYTYPE_ARRAY: "Array"}


@dataclass(frozen=True)
class StridedCopy:
    """One strided copy case: ``function`` copies host rows to a device buffer and back."""

    id: str
    title: str
    function: str
    slices: int  # 1: a CUDA_MEMCPY2D; more: a CUDA_MEMCPY3D of that depth
    pitched: bool  # the device buffer from cuMemAllocPitch (else cuMemAlloc, rows packed)
    on_stream: bool = False

    @property
    def needs(self) -> tuple[str, ...]:
        return ("memory.pitched", "memory.copy_roundtrip") if self.pitched else ("memory.copy_roundtrip",)


COPIES = (
    StridedCopy("2d", "2D copy host <-> pitched device", "cuMemcpy2D", 1, pitched=True),
    StridedCopy("2d_unaligned", "2D copy, unaligned variant", "cuMemcpy2DUnaligned", 1, pitched=True),
    StridedCopy("2d_async", "2D copy on a stream", "cuMemcpy2DAsync", 1, pitched=True, on_stream=True),
    StridedCopy("3d", "3D copy host <-> device", "cuMemcpy3D", D, pitched=False),
    StridedCopy("3d_async", "3D copy on a stream", "cuMemcpy3DAsync", D, pitched=False, on_stream=True),
)


def _rows(h: int = H, w: int = W, base: float = 0.0) -> list[float]:
    return [base + float(r * 100 + c) for r in range(h) for c in range(w)]


def memcpy_desc(s: Setup, src: tuple[int, Any, int], dst: tuple[int, Any, int], slices: int = 1) -> Any:
    """A ``CUDA_MEMCPY2D`` (``slices`` 1) or ``CUDA_MEMCPY3D`` copying :data:`H` rows of :data:`W`
    floats per slice; each side is (memory type, host pointer / device pointer / array, pitch), an
    array's pitch unused."""
    desc = s.ffi.new("CUDA_MEMCPY2D *" if slices == 1 else "CUDA_MEMCPY3D *")
    for end, (kind, where, pitch) in (("src", src), ("dst", dst)):
        setattr(desc, f"{end}MemoryType", kind)
        setattr(desc, end + _SIDE_FIELD[kind], where)
        if kind != CU_MEMORYTYPE_ARRAY:
            setattr(desc, f"{end}Pitch", pitch)
        if slices > 1:
            setattr(desc, f"{end}Height", H)
    desc.WidthInBytes, desc.Height = 4 * W, H
    if slices > 1:
        desc.Depth = slices
    return desc


def _device_buffer(s: Setup, copy: StridedCopy) -> tuple[int, int]:
    """A device buffer for the copy's rows, and its pitch in bytes."""
    rows = H * copy.slices
    if not copy.pitched:
        return s.alloc(4 * W * rows), 4 * W
    s.context()
    ptr, pitch = s.ffi.new("CUdeviceptr *"), s.ffi.new("size_t *")
    s.d.call("cuMemAllocPitch", ptr, pitch, 4 * W, rows, 4)
    return int(ptr[0]), int(pitch[0])


def strided_copy(s: Setup, copy: StridedCopy) -> None:
    """Host rows -> device buffer -> host rows through ``copy.function`` both ways; each row must
    lie on the device at its pitch and come back as it went."""
    values = _rows(H * copy.slices)
    host, back = s.ffi.new("float[]", values), s.ffi.new("float[]", len(values))
    device, pitch = _device_buffer(s, copy)
    extra = (s.stream_or_default(),) if copy.on_stream else ()
    on_device = (CU_MEMORYTYPE_DEVICE, device, pitch)

    def move(src: tuple[int, Any, int], dst: tuple[int, Any, int]) -> None:
        s.d.call(copy.function, memcpy_desc(s, src, dst, copy.slices), *extra)
        if extra:
            s.d.call("cuStreamSynchronize", extra[0])

    move((CU_MEMORYTYPE_HOST, host, 4 * W), on_device)
    stride = pitch // 4
    laid = s.download_floats(device, stride * H * copy.slices)
    rows = [x for row in range(H * copy.slices) for x in laid[row * stride:row * stride + W]]
    expect(rows == values, f"{copy.function} wrote the rows at other places than their pitch {pitch}")
    move(on_device, (CU_MEMORYTYPE_HOST, back, 4 * W))
    expect(list(back) == values, f"{copy.function} round trip differs")


for _copy in COPIES:
    case(_copy.id, _copy.title, *_copy.needs)(functools.partial(strided_copy, copy=_copy))


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
    up = memcpy_desc(s, (CU_MEMORYTYPE_HOST, host, 4 * W), (CU_MEMORYTYPE_ARRAY, arr2, 0))
    down = memcpy_desc(s, (CU_MEMORYTYPE_ARRAY, arr2, 0), (CU_MEMORYTYPE_HOST, out, 4 * W))
    s.d.call("cuMemcpy2D", up)
    s.d.call("cuMemcpy2D", down)
    s.d.call("cuArrayDestroy", arr2)
    expect(list(out) == rows, "2D array round trip differs")
