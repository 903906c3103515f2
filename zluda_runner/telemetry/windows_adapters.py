"""Which Windows display adapter is the workload's: DXGI lists them (LUID, vendor, name, VRAM),
and ``HIP_VISIBLE_DEVICES`` picks among the AMD ones in DXGI's order (the order HIP's Windows
runtime numbers them, assumed, and said so when there is more than one), read as ROCm reads it
(:func:`zluda_runner.host.visibility.workload_target`).

DXGI through ctypes COM (dxgi.h, Windows SDK): ``CreateDXGIFactory1``, ``IDXGIFactory1::EnumAdapters1``
(vtable slot 12), ``IDXGIAdapter1::GetDesc1`` (slot 10), ``IUnknown::Release`` (slot 2).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zluda_runner.host.visibility import workload_target
from zluda_runner.telemetry.model import NoTelemetry
from zluda_runner.telemetry.windows_counters import luid_key

AMD_VENDOR = 0x1002
MAX_ADAPTERS = 64
_DXGI_ERROR_NOT_FOUND = 0x887A0004
_DXGI_ADAPTER_FLAG_SOFTWARE = 2


@dataclass(frozen=True)
class Adapter:
    luid: str  # as the counters spell it (windows_counters.luid_key)
    description: str
    vendor_id: int
    dedicated_memory: int  # bytes of VRAM
    software: bool = False


def choose_adapter(adapters: Sequence[Adapter], listed: Sequence[str],
                   env: Mapping[str, str]) -> tuple[str, str, int | None] | NoTelemetry:
    """(LUID, which GPU in words, VRAM total) of the workload's adapter. ``adapters``: DXGI's list
    (empty when DXGI could not be asked); ``listed``: the LUIDs the memory counter lists."""
    hardware = [a for a in adapters if not a.software]
    amd = [a for a in hardware if a.vendor_id == AMD_VENDOR]
    selection = env.get("HIP_VISIBLE_DEVICES") or env.get("CUDA_VISIBLE_DEVICES")
    setting = f"HIP_VISIBLE_DEVICES={selection}" if selection else "HIP_VISIBLE_DEVICES unset"
    if amd:
        a = workload_target(amd, env)[0]  # the user's choice read as ROCm reads it
        if a is None:
            return NoTelemetry(f"{setting} names none of the {len(amd)} AMD adapter(s)")
        how = f": AMD adapter {amd.index(a)} of {len(amd)} in DXGI's order ({setting})" * (len(amd) > 1)
        return a.luid, a.description + how, a.dedicated_memory or None
    if hardware:
        a = hardware[0]
        note = "not an AMD GPU (ZLUDA needs one); the first adapter DXGI lists"
        return a.luid, f"{a.description}: {note}", a.dedicated_memory or None
    if not listed:
        return NoTelemetry("the GPU counters list no adapter")
    how = ""
    if len(listed) > 1:
        how = f" (the first of {len(listed)} the counters list; DXGI could not tell which is AMD)"
    return listed[0], f"adapter {listed[0]}{how}", None


def dxgi_adapters() -> list[Adapter]:  # pragma: no cover - Windows only
    """The display adapters DXGI enumerates; empty where DXGI cannot be asked."""
    if sys.platform != "win32":
        return []
    try:
        return _enumerate()
    except (OSError, AttributeError, ValueError):
        return []


class _Luid(ctypes.Structure):
    _fields_ = [("LowPart", ctypes.c_uint32), ("HighPart", ctypes.c_int32)]


class _AdapterDesc1(ctypes.Structure):
    _fields_ = [
        ("Description", ctypes.c_wchar * 128),
        ("VendorId", ctypes.c_uint),
        ("DeviceId", ctypes.c_uint),
        ("SubSysId", ctypes.c_uint),
        ("Revision", ctypes.c_uint),
        ("DedicatedVideoMemory", ctypes.c_size_t),
        ("DedicatedSystemMemory", ctypes.c_size_t),
        ("SharedSystemMemory", ctypes.c_size_t),
        ("AdapterLuid", _Luid),
        ("Flags", ctypes.c_uint),
    ]


class _Guid(ctypes.Structure):
    _fields_ = [("Data1", ctypes.c_uint32), ("Data2", ctypes.c_uint16), ("Data3", ctypes.c_uint16),
                ("Data4", ctypes.c_ubyte * 8)]


# {770aae78-f26f-4dba-a829-253c83d1b387}
_IID_IDXGIFactory1 = _Guid(
    0x770AAE78, 0xF26F, 0x4DBA, (ctypes.c_ubyte * 8)(0xA8, 0x29, 0x25, 0x3C, 0x83, 0xD1, 0xB3, 0x87)
)


def _method(obj: ctypes.c_void_p, slot: int, *argtypes: Any) -> Any:  # pragma: no cover - Windows only
    vtable = ctypes.cast(obj, ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p))).contents
    prototype = getattr(ctypes, "WINFUNCTYPE")(ctypes.c_long, ctypes.c_void_p, *argtypes)  # noqa: B009
    return prototype(vtable[slot])


def _enumerate() -> list[Adapter]:  # pragma: no cover - Windows only
    dxgi = getattr(ctypes, "WinDLL")("dxgi")  # noqa: B009 (absent on Linux)
    factory = ctypes.c_void_p()
    if dxgi.CreateDXGIFactory1(ctypes.byref(_IID_IDXGIFactory1), ctypes.byref(factory)) != 0 or not factory:
        return []
    found: list[Adapter] = []
    try:
        enum = _method(factory, 12, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p))
        for index in range(MAX_ADAPTERS):
            adapter = ctypes.c_void_p()
            hr = enum(factory, index, ctypes.byref(adapter)) & 0xFFFFFFFF
            if hr == _DXGI_ERROR_NOT_FOUND or hr != 0 or not adapter:
                break
            try:
                desc = _AdapterDesc1()
                if _method(adapter, 10, ctypes.POINTER(_AdapterDesc1))(adapter, ctypes.byref(desc)) == 0:
                    found.append(Adapter(
                        luid=luid_key(desc.AdapterLuid.HighPart, desc.AdapterLuid.LowPart),
                        description=desc.Description.strip() or "display adapter",
                        vendor_id=desc.VendorId,
                        dedicated_memory=int(desc.DedicatedVideoMemory),
                        software=bool(desc.Flags & _DXGI_ADAPTER_FLAG_SOFTWARE),
                    ))
            finally:
                _method(adapter, 2)(adapter)
    finally:
        _method(factory, 2)(factory)
    return found
