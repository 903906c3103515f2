"""The GPU performance counters Windows keeps (WDDM 2.0+, Windows 10 1709 on), read as plain data.

The graphics kernel's scheduler and memory manager publish, per process and per engine
(Microsoft DirectX blog, "GPUs in the task manager", 2017; the Performance Monitor's "GPU Engine"
and "GPU Adapter Memory" objects):

- ``\\GPU Engine(pid_<pid>_luid_<high>_<low>_phys_<n>_eng_<n>_engtype_<type>)\\Utilization Percentage``:
  how busy one engine (3D, Compute_0, Copy, VideoDecode ...) of one adapter was for one process;
  Task Manager's figure for a GPU is its busiest engine, summed over processes;
- ``\\GPU Adapter Memory(luid_<high>_<low>_phys_<n>)\\Dedicated Usage``: bytes of the adapter's
  own memory (VRAM) in use.

The functions here turn the instance names and values PDH hands back into one adapter's figures;
windows_pdh.py does the reading.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

ENGINE_COUNTER = r"\GPU Engine(*)\Utilization Percentage"
MEMORY_COUNTER = r"\GPU Adapter Memory(*)\Dedicated Usage"

_ENGINE = re.compile(
    r"pid_(?P<pid>\d+)_luid_(?P<luid>0x[0-9A-Fa-f]{8}_0x[0-9A-Fa-f]{8})_phys_(?P<phys>\d+)"
    r"_eng_(?P<eng>\d+)_engtype_(?P<type>.*)"
)
_ADAPTER = re.compile(r"luid_(?P<luid>0x[0-9A-Fa-f]{8}_0x[0-9A-Fa-f]{8})_phys_(?P<phys>\d+)")


def luid_key(high: int, low: int) -> str:
    """An adapter LUID as the counters' instance names spell it: ``0x00000000_0x0000D1B2``."""
    return f"0x{high & 0xFFFFFFFF:08X}_0x{low & 0xFFFFFFFF:08X}"


@dataclass(frozen=True)
class EngineSample:
    pid: int
    luid: str  # upper-case hex, as luid_key spells it
    phys: int
    engine: int
    engtype: str
    percent: float


def parse_engines(items: Iterable[tuple[str, float]]) -> list[EngineSample]:
    out: list[EngineSample] = []
    for name, value in items:
        m = _ENGINE.fullmatch(name)
        if m:
            out.append(EngineSample(int(m["pid"]), m["luid"].upper().replace("0X", "0x"), int(m["phys"]),
                                    int(m["eng"]), m["type"], value))
    return out


def adapter_busy(engines: Iterable[EngineSample], luid: str) -> float | None:
    """The adapter's busy percentage as Task Manager shows it: its busiest engine, summed over the
    processes using it (capped at 100); None when no engine of this adapter was listed."""
    per_engine: dict[tuple[int, int], float] = {}
    for e in engines:
        if e.luid == luid:
            per_engine[(e.phys, e.engine)] = per_engine.get((e.phys, e.engine), 0.0) + e.percent
    values = [v for v in per_engine.values() if math.isfinite(v)]
    if not values:
        return None
    return min(100.0, max(0.0, max(values)))


def adapter_memory(items: Iterable[tuple[str, float]], luid: str) -> int | None:
    """Dedicated memory in use on the adapter (over its physical parts); None when not listed, or
    when a value is no byte count (NaN, infinite, negative: ``int()`` of NaN raised)."""
    total, found = 0.0, False
    for name, value in items:
        m = _ADAPTER.fullmatch(name)
        if m and m["luid"].upper().replace("0X", "0x") == luid:
            if not (math.isfinite(value) and value >= 0):
                return None
            total, found = total + value, True
    return int(total) if found and math.isfinite(total) else None


def adapter_luids(items: Iterable[tuple[str, float]]) -> list[str]:
    """The adapters the memory counter lists, in the order listed, each once."""
    seen: list[str] = []
    for name, _value in items:
        m = _ADAPTER.fullmatch(name)
        if m:
            key = m["luid"].upper().replace("0X", "0x")
            if key not in seen:
                seen.append(key)
    return seen
