"""Texture and surface objects over linear memory and arrays."""

from __future__ import annotations

from zluda_runner.probe.cases.base import CU_AD_FORMAT_FLOAT, Case, Setup, collector, expect
from zluda_runner.probe.cases.copies import new_array

CASES: list[Case] = []
case = collector(CASES, "texture")
CU_RESOURCE_TYPE_ARRAY, CU_RESOURCE_TYPE_LINEAR = 0, 2
CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT = 1, 0


@case("object_linear", "texture object over linear memory; resource read back", "memory.alloc_free")
def case_tex_linear(s: Setup) -> None:
    ptr = s.alloc(4096)
    res = s.ffi.new("CUDA_RESOURCE_DESC *")
    res.resType = CU_RESOURCE_TYPE_LINEAR
    res.res.linear.devPtr, res.res.linear.format = ptr, CU_AD_FORMAT_FLOAT
    res.res.linear.numChannels, res.res.linear.sizeInBytes = 1, 4096
    tex = s.ffi.new("CUDA_TEXTURE_DESC *")
    tex.addressMode[0] = CU_TR_ADDRESS_MODE_CLAMP
    tex.filterMode = CU_TR_FILTER_MODE_POINT
    obj = s.ffi.new("CUtexObject *")
    s.d.call("cuTexObjectCreate", obj, res, tex, s.ffi.NULL)
    back = s.ffi.new("CUDA_RESOURCE_DESC *")
    s.d.call("cuTexObjectGetResourceDesc", back, obj[0])
    s.d.call("cuTexObjectDestroy", obj[0])
    expect(back.resType == CU_RESOURCE_TYPE_LINEAR, f"resource type {back.resType} read back")
    expect(back.res.linear.devPtr == ptr, "resource pointer read back differs")


@case("surface_array", "surface object over an array", "array.create_2d")
def case_surface(s: Setup) -> None:
    arr = new_array(s)
    res = s.ffi.new("CUDA_RESOURCE_DESC *")
    res.resType = CU_RESOURCE_TYPE_ARRAY
    res.res.array.hArray = arr
    obj = s.ffi.new("CUsurfObject *")
    s.d.call("cuSurfObjectCreate", obj, res)
    s.d.call("cuSurfObjectDestroy", obj[0])
    s.d.call("cuArrayDestroy", arr)
