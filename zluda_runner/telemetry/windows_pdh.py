"""Windows: the OS's GPU performance counters through PDH (pdh.dll, via ctypes), behind the
TelemetrySource protocol.  The counters and what they mean: windows_counters.py; which adapter:
windows_adapters.py.

PDH calls (pdh.h, Windows SDK): ``PdhOpenQueryW``, ``PdhAddEnglishCounterW`` (English counter
paths whatever the display language), ``PdhCollectQueryData`` (a rate counter such as Utilization
Percentage has a value from the second collection on), ``PdhGetFormattedCounterArrayW`` (asked
once for the size: ``PDH_MORE_DATA``, then for the items), ``PdhCloseQuery``.  Where the counters
do not exist (before Windows 10 1709, no WDDM 2 driver, Wine) adding them fails: no telemetry,
with the PDH status said.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Mapping
from typing import Any

from zluda_runner.telemetry.model import GpuReading, NoTelemetry
from zluda_runner.telemetry.windows_adapters import choose_adapter, dxgi_adapters
from zluda_runner.telemetry.windows_counters import (
    ENGINE_COUNTER,
    MEMORY_COUNTER,
    adapter_busy,
    adapter_luids,
    adapter_memory,
    parse_engines,
)

PDH_FMT_DOUBLE = 0x00000200
PDH_FMT_NOCAP100 = 0x00008000  # engine percentages summed over processes may pass 100 briefly
PDH_MORE_DATA = 0x800007D2
PDH_NO_DATA = 0x800007D5
PDH_CSTATUS_VALID_DATA = 0x0
PDH_CSTATUS_NEW_DATA = 0x1
MAX_BUFFER = 8 * 1024 * 1024  # a few thousand engine instances at most: bounded all the same
NO_COUNTERS_HINT = (
    "Windows keeps GPU counters from Windows 10 1709 on with a WDDM 2 driver (Task Manager's GPU tab "
    "shows them); Wine has none"
)


class _Value(ctypes.Union):
    _fields_ = [("longValue", ctypes.c_long), ("doubleValue", ctypes.c_double),
                ("largeValue", ctypes.c_longlong), ("stringValue", ctypes.c_void_p)]


class _FmtValue(ctypes.Structure):
    _fields_ = [("CStatus", ctypes.c_uint32), ("value", _Value)]


class _Item(ctypes.Structure):
    _fields_ = [("szName", ctypes.c_wchar_p), ("FmtValue", _FmtValue)]


_STATUS_NAMES = {
    0xC0000BB8: "PDH_CSTATUS_NO_OBJECT",
    0xC0000BB9: "PDH_CSTATUS_NO_COUNTER",  # what Wine 8 answers for the GPU counters
    0xC0000BC0: "PDH_CSTATUS_BAD_COUNTERNAME",
    0xC0000BC4: "PDH_CSTATUS_NO_INSTANCE",
}


def _status(code: int) -> str:
    code &= 0xFFFFFFFF
    name = _STATUS_NAMES.get(code)
    return f"PDH status 0x{code:08X}" + (f" {name}" if name else "")


class PdhQuery:  # pragma: no cover - Windows only (Wine runs the failure path: tests/windows)
    """One PDH query with the two GPU counters; raises OSError (with the PDH status) when either
    cannot be added."""

    def __init__(self) -> None:
        pdh: Any = getattr(ctypes, "WinDLL")("pdh")  # noqa: B009 (absent on Linux)
        pdh.PdhOpenQueryW.argtypes = [ctypes.c_wchar_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
        pdh.PdhAddEnglishCounterW.argtypes = [ctypes.c_void_p, ctypes.c_wchar_p, ctypes.c_size_t,
                                              ctypes.POINTER(ctypes.c_void_p)]
        pdh.PdhCollectQueryData.argtypes = [ctypes.c_void_p]
        pdh.PdhGetFormattedCounterArrayW.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                                                     ctypes.POINTER(ctypes.c_uint32),
                                                     ctypes.POINTER(ctypes.c_uint32), ctypes.c_void_p]
        pdh.PdhCloseQuery.argtypes = [ctypes.c_void_p]
        for fn in ("PdhOpenQueryW", "PdhAddEnglishCounterW", "PdhCollectQueryData",
                   "PdhGetFormattedCounterArrayW", "PdhCloseQuery"):
            getattr(pdh, fn).restype = ctypes.c_long
        self._pdh = pdh
        self._query = ctypes.c_void_p()
        self._lock = threading.Lock()
        code = pdh.PdhOpenQueryW(None, 0, ctypes.byref(self._query))
        if code != 0:
            raise OSError(f"PdhOpenQueryW: {_status(code)}")
        try:
            self._engine = self._add(ENGINE_COUNTER)
            self._memory = self._add(MEMORY_COUNTER)
            self._pdh.PdhCollectQueryData(self._query)  # the first of the two a rate needs
        except OSError:
            self.close()
            raise

    def _add(self, path: str) -> ctypes.c_void_p:
        counter = ctypes.c_void_p()
        code = self._pdh.PdhAddEnglishCounterW(self._query, path, 0, ctypes.byref(counter))
        if code != 0:
            raise OSError(f"{path}: {_status(code)}")
        return counter

    def collect(self) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """One collection: (engine utilisation items, dedicated memory items), as (instance, value)."""
        with self._lock:
            if not self._query:
                return [], []
            code = self._pdh.PdhCollectQueryData(self._query)
            if code != 0 and (code & 0xFFFFFFFF) != PDH_NO_DATA:
                return [], []
            return self._items(self._engine), self._items(self._memory)

    def _items(self, counter: ctypes.c_void_p) -> list[tuple[str, float]]:
        size, count = ctypes.c_uint32(0), ctypes.c_uint32(0)
        fmt = PDH_FMT_DOUBLE | PDH_FMT_NOCAP100
        code = self._pdh.PdhGetFormattedCounterArrayW(counter, fmt, ctypes.byref(size), ctypes.byref(count),
                                                      None)
        if (code & 0xFFFFFFFF) != PDH_MORE_DATA or not 0 < size.value <= MAX_BUFFER:
            return []
        buffer = ctypes.create_string_buffer(size.value)
        code = self._pdh.PdhGetFormattedCounterArrayW(counter, fmt, ctypes.byref(size), ctypes.byref(count),
                                                      buffer)
        if code != 0:
            return []
        n = min(count.value, size.value // ctypes.sizeof(_Item))
        if n == 0:
            return []
        items = ctypes.cast(buffer, ctypes.POINTER(_Item * n)).contents
        return [(i.szName or "", float(i.FmtValue.value.doubleValue)) for i in items
                if i.FmtValue.CStatus in (PDH_CSTATUS_VALID_DATA, PDH_CSTATUS_NEW_DATA)]

    def close(self) -> None:
        with self._lock:
            if self._query:
                self._pdh.PdhCloseQuery(self._query)
                self._query = ctypes.c_void_p()


class PdhSource:  # pragma: no cover - Windows only
    """A :class:`~zluda_runner.telemetry.source.TelemetrySource` over one adapter's counters."""

    backend = "windows-pdh"

    def __init__(self, query: PdhQuery, luid: str, device: str, total: int | None) -> None:
        self._query, self._luid, self.device, self._total = query, luid, device, total

    def vram_total(self) -> int | None:
        return self._total

    def read(self) -> GpuReading:
        engines, memory = self._query.collect()
        return GpuReading(busy_percent=adapter_busy(parse_engines(engines), self._luid),
                          vram_used=adapter_memory(memory, self._luid))

    def close(self) -> None:
        self._query.close()


def open_pdh(env: Mapping[str, str] | None = None) -> PdhSource | NoTelemetry:  # pragma: no cover
    if sys.platform != "win32":
        return NoTelemetry("Windows GPU counters are read on Windows only")
    try:
        query = PdhQuery()
    except (OSError, AttributeError) as exc:
        return NoTelemetry(f"no Windows GPU performance counters here ({exc}): {NO_COUNTERS_HINT}")
    _engines, memory = query.collect()
    chosen = choose_adapter(dxgi_adapters(), adapter_luids(memory), env or {})
    if isinstance(chosen, NoTelemetry):
        query.close()
        return chosen
    luid, device, total = chosen
    return PdhSource(query, luid, device, total)
