"""A cheap look at the host, for recording and for the run path's first word about the host.

Reads only small files (KFD topology, the amdgpu module version) and names (the HIP finder):
nothing is executed or loaded, so it costs milliseconds and cannot hang on a broken driver.
Like the doctor, it reads a fake tree instead of / when ``ZLUDA_RUNNER_ROOT`` names one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.host.fs import ROOT_ENV, HostFs, root_from_env
from zluda_runner.host.gpus import gpus_from_kfd, target_gpu
from zluda_runner.host.hipversion import find_host_hip


@dataclass
class QuickFacts:
    """What a run can say about the host without asking the GPU."""

    gpu_name: str | None = None
    gfx: str | None = None
    hip_version: str | None = None
    hip_kind: str | None = None
    driver_version: str | None = None
    problems: list[str] = field(default_factory=list)  # what stands in the way, in plain words

    def fingerprint(self) -> dict[str, str | None]:
        """The flat keys the results store takes as ``host=``."""
        return {"gpu_name": self.gpu_name, "gfx": self.gfx, "hip_version": self.hip_version,
                "driver_version": self.driver_version}


def quick_facts(env: Mapping[str, str] | None = None, root: Path | None = None,
                platform: str | None = None) -> QuickFacts:
    environ = os.environ if env is None else env
    plat = platform or sys.platform
    root = root if root is not None else root_from_env(environ.get(ROOT_ENV) or "")
    fs = HostFs(root)
    facts = QuickFacts()
    if plat.startswith("linux"):
        gpus = gpus_from_kfd(fs)
        gpu = target_gpu(gpus, environ) if gpus else None
        if gpu is not None:
            facts.gpu_name, facts.gfx = gpu.name, gpu.gfx
        elif not fs.exists("/dev/kfd"):
            facts.problems.append("no AMD GPU driver (/dev/kfd is missing)")
        else:
            facts.problems.append("no AMD GPU in the KFD topology")
        version = (fs.read_text("/sys/module/amdgpu/version") or "").strip()
        if gpu is not None:
            facts.driver_version = f"amdgpu {version or '(in-tree)'}"
    hip = find_host_hip(root, environ, plat)
    if hip is not None:
        facts.hip_version, facts.hip_kind = hip.major_minor, hip.kind
    else:
        facts.problems.append("no HIP/ROCm runtime found (looked in ROCM_PATH, /opt/rocm*, the system "
                              "library folders)" if plat != "win32" else "no AMD HIP SDK found")
    return facts
