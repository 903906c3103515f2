"""What the host has, as plain data: GPU agents, the ROCm / HIP SDK install (the gathered facts:
:mod:`.facts`, apart, so that a launch reading the GPUs imports no HIP query).

Discovery (:mod:`.gpus`, :mod:`.rocm`) fills these; the doctor judges them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.units import format_bytes
from zluda_runner.host.hipversion import install_words


@dataclass
class GpuAgent(JsonMixin):
    index: int
    name: str
    gfx: str | None
    source: str  # "hip", "kfd", "rocminfo", "rocm_agent_enumerator", "registry"
    memory_bytes: int | None = None
    integrated: bool = False
    compute_units: int | None = None
    driver_version: str | None = None  # Windows registry only

    def label(self) -> str:
        bits = [self.gfx or "gfx unknown"]
        if self.memory_bytes:
            bits.append(format_bytes(self.memory_bytes))
        if self.integrated:
            bits.append("integrated")
        return f"[{self.index}] {self.name or 'AMD GPU'} ({', '.join(bits)})"


@dataclass(frozen=True)
class HostGpu(JsonMixin):
    """One AMD GPU as HIP numbers it, and the fact that says whether it is integrated."""

    index: int
    name: str
    gfx: str | None
    integrated: bool
    why: str  # e.g. "KFD node 1: cpu_cores_count 16 (an APU)"


@dataclass
class RocmInstall(JsonMixin):
    kind: str  # "rocm" (a ROCm folder), "hip-sdk" (Windows) or "distribution" (a distro's package)
    path: Path
    version: str | None = None
    version_source: str | None = None
    package: str | None = None  # the package number where it is not HIP's (ROCm 10.0.0 with HIP 7.17)

    def words(self) -> str:
        """``ROCm 6.2.4``, ``HIP 7.17 (ROCm 10.0.0)``: as every view says it (:func:`install_words`)."""
        return install_words(self.kind, self.version, self.package)

    @property
    def major_minor(self) -> tuple[int, int] | None:
        m = re.match(r"(\d+)\.(\d+)", self.version or "")
        return (int(m.group(1)), int(m.group(2))) if m else None

    @property
    def label(self) -> str:
        return {"hip-sdk": "HIP SDK", "distribution": "distribution HIP"}.get(self.kind, "ROCm")
