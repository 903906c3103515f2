"""The host's facts as the doctor gathers them (:class:`HostFacts`): the GPUs, the ROCm / HIP SDK install,
the HIP runtime's answer, the compile cache.

Discovery (:mod:`.gpus`, :mod:`.rocm`, :mod:`.hip`) fills them; the doctor judges them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.serial import JsonMixin
from zluda_runner.host.compile_cache import CompileCacheInfo
from zluda_runner.host.hip import HipInfo
from zluda_runner.host.model import GpuAgent, RocmInstall


@dataclass
class HostFacts(JsonMixin):
    os: str
    arch: str
    os_version: str
    python: str
    root: Path | None = None
    gpus: list[GpuAgent] = field(default_factory=list)
    gpu_source: str | None = None
    rocm: RocmInstall | None = None
    hip: HipInfo | None = None
    driver_version: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    gpu_search: list[str] = field(default_factory=list)
    gpu_asked: list[str] = field(default_factory=list)  # the ids of the back ends asked (gpu_search's)
    compile_cache: CompileCacheInfo | None = None
