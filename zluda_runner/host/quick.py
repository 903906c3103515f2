"""A cheap look at the host, for recording and for the run path's first word about the host.

Reads only small files (KFD topology, the amdgpu module version) and names (the HIP finder):
nothing is executed or loaded, so it costs milliseconds and cannot hang on a broken driver.
Like the doctor, it reads a fake tree instead of / when ``ZLUDA_RUNNER_ROOT`` names one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.hipfound import HipFound, HipRoute
from zluda_runner.host.fs import ROOT_ENV, HostFs, root_from_env
from zluda_runner.host.gpus import effective_gfx, gpus_from_kfd, target_gpu
from zluda_runner.host.hipversion import HostHip, find_host_hip, gone_hip_folders, gone_words
from zluda_runner.host.model import GpuAgent

AMD_ROCM_LINUX = "https://rocm.docs.amd.com/projects/install-on-linux/"
AMD_HIP_SDK = "https://www.amd.com/en/developer/resources/rocm-hub/hip-sdk.html"
# What each route gives (the newest line of each major it offers); DESIGN.md, field facts.
_AMD_LINUX = HipRoute(f"ROCm 6 or 7 from AMD's repository ({AMD_ROCM_LINUX})", ("6.4", "7.1"), "rocm")
_DEBIAN = (HipRoute("Debian trixie's packaged ROCm (HIP 5.7)", ("5.7",), "distribution"),
           HipRoute("Debian sid's packaged ROCm (HIP 6.4)", ("6.4",), "distribution"))
_AMD_WINDOWS = HipRoute(f"AMD's HIP SDK 5.7, 6.2, 6.4 or 7.1 ({AMD_HIP_SDK})", ("5.7", "6.2", "6.4", "7.1"),
                        "hip-sdk")


@dataclass
class QuickFacts:
    """What a run can say about the host without asking the GPU."""

    hip: HipFound  # the HIP found, in words, and the ways to another one
    gpu_name: str | None = None
    gfx: str | None = None
    driver_version: str | None = None
    problems: list[str] = field(default_factory=list)  # what stands in the way, in plain words

    def fingerprint(self) -> dict[str, str | None]:
        """The flat keys the results store takes as ``host=``."""
        return {"gpu_name": self.gpu_name, "gfx": self.gfx, "hip_version": self.hip.version,
                "driver_version": self.driver_version}


def quick_facts(env: Mapping[str, str] | None = None, root: Path | None = None,
                platform: str | None = None, agents: list[GpuAgent] | None = None) -> QuickFacts:
    """The host in a few facts; ``agents``: the KFD topology's GPUs where read already."""
    environ = os.environ if env is None else env
    plat = platform or sys.platform
    root = root if root is not None else root_from_env(environ.get(ROOT_ENV) or "")
    fs = HostFs(root)
    facts = QuickFacts(hip_found(environ, root, plat))
    if plat.startswith("linux"):
        gpus = gpus_from_kfd(fs) if agents is None else agents
        gpu = target_gpu(gpus, environ) if gpus else None
        if gpu is not None:
            facts.gpu_name, facts.gfx = gpu.name, gpu.gfx
        elif not fs.exists("/dev/kfd"):
            facts.problems.append("no AMD GPU driver (/dev/kfd is missing)")
        else:
            facts.problems.append("no AMD GPU in the KFD topology")
        if gpu is not None:
            facts.driver_version = amdgpu_driver(fs)
    if facts.hip.origin is None:
        gone = gone_words(gone_hip_folders(root, environ, plat))
        if plat == "win32":
            facts.problems.append("no AMD HIP SDK found" + (f" ({gone})" if gone else ""))
        else:
            facts.problems.append("no HIP/ROCm runtime found (looked in ROCM_PATH, /opt/rocm*, the system "
                                  f"library folders{'; ' + gone if gone else ''})")
    return facts


def amdgpu_module(fs: HostFs) -> str | None:
    """The loaded amdgpu kernel module's version (its sysfs ``version``; "" for an in-tree module, which
    has none); None when the module is not loaded."""
    if not fs.is_dir("/sys/module/amdgpu"):
        return None
    return (fs.read_small("/sys/module/amdgpu/version") or "").strip()


def amdgpu_driver(fs: HostFs) -> str | None:
    """``amdgpu <version>`` (``amdgpu (in-tree)`` without one) where the module is loaded, else None: the
    Linux driver as a recorded run and the doctor name it."""
    version = amdgpu_module(fs)
    return None if version is None else f"amdgpu {version or '(in-tree)'}"


def os_release(fs: HostFs) -> dict[str, str]:
    """``/etc/os-release`` (else ``/usr/lib/os-release``) as a dict: ``ID``, ``VERSION_CODENAME`` ..."""
    text = fs.read_text("/etc/os-release") or fs.read_text("/usr/lib/os-release") or ""
    out: dict[str, str] = {}
    for line in text.splitlines()[:200]:
        key, sep, value = line.partition("=")
        if sep and key.strip().isidentifier():
            out[key.strip()] = value.strip().strip("\"'")
    return out


def describe_hip(hip: HostHip | None, fs: HostFs, platform: str,
                 gone: Sequence[tuple[str, str]] = ()) -> HipFound:
    """The host's HIP in the user's words and the ways to another on this system (one text for every
    command: run, plan, warmup, releases, doctor). ``gone``: the HIP variables naming a missing folder
    (:func:`~zluda_runner.host.hipversion.gone_hip_folders`), said where no HIP is found."""
    if platform == "win32":
        routes: tuple[HipRoute, ...] = (_AMD_WINDOWS,)
        distro = ""
    else:
        info = os_release(fs)
        distro = info.get("NAME", "").split(" ")[0] or "the distribution"
        routes = (_AMD_LINUX, *(_DEBIAN if info.get("ID") == "debian" else ()))
    if hip is None:
        return HipFound(None, "no HIP/ROCm found" + (f" ({gone_words(gone)})" if gone else ""), routes)
    version = hip.major_minor
    shown = f"HIP {version}" if version else "HIP of unknown version"
    if hip.kind == "distribution":
        major = (version or "").split(".")[0]
        package = f"libamdhip64-{major} package" if major else "package"
        text = f"{shown} from {distro}'s {package} ({hip.source})"
    else:
        text = f"{hip.words()} at {hip.path}"  # "HIP SDK 6.4 at ...", "HIP 7.17 (ROCm 10.0.0) at ..."
    return HipFound(version, text, routes, origin=hip.kind, path=hip.path)


def hip_found(env: Mapping[str, str] | None = None, root: Path | None = None,
              platform: str | None = None) -> HipFound:
    """The host's HIP (:func:`describe_hip`), read under ``ZLUDA_RUNNER_ROOT`` when that names a fake tree."""
    environ = os.environ if env is None else env
    plat = platform or sys.platform
    root = root if root is not None else root_from_env(environ.get(ROOT_ENV) or "")
    found = find_host_hip(root, _set_only(environ), plat)
    gone = gone_hip_folders(root, environ, plat) if found is None else []
    return describe_hip(found, HostFs(root), plat, gone)


def judged_gfx(agents: list[GpuAgent], env: Mapping[str, str], platform: str) -> str | None:
    """The gfx of the GPU the run uses, as the doctor's ``gpu_hip`` check judges it: the first of ``agents``
    (the KFD topology's GPUs) that ``HIP_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES`` leave visible, as
    ``HSA_OVERRIDE_GFX_VERSION`` presents it; None where that is not known without asking HIP (Windows,
    no GPU, every GPU hidden)."""
    if not platform.startswith("linux"):
        return None
    gpu = target_gpu(agents, env) if agents else None
    return effective_gfx(gpu, env, platform) if gpu is not None else None


def _set_only(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without empty variables: ``HIP_PATH_64=`` names no folder (not the current one)."""
    return {k: v for k, v in env.items() if v}
