"""Checks of the machine itself: platform, GPUs, gfx target, device order, driver."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from zluda_runner.doctor.model import Check, Status
from zluda_runner.host.facts import HostFacts
from zluda_runner.host.fs import HostFs
from zluda_runner.host.gfx import generation, is_rdna_or_newer
from zluda_runner.host.hip import format_hip_version
from zluda_runner.host.model import GpuAgent
from zluda_runner.host.quick import amdgpu_module
from zluda_runner.host.visibility import Visibility
from zluda_runner.release.gpurules import rules_against
from zluda_runner.release.model import GpuHipRule


def check_platform(facts: HostFacts) -> Check:
    arch = facts.arch.lower()
    if facts.os == "macos":
        return Check(
            "platform",
            Status.FAIL,
            f"macOS ({facts.arch}): ZLUDA has no macOS support",
            "Use Linux or Windows on a machine with an AMD Radeon GPU.",
        )
    if facts.os not in ("linux", "windows"):
        return Check(
            "platform",
            Status.FAIL,
            f"{facts.os} is not a platform ZLUDA is built for",
            "Use Linux or Windows (x86-64).",
        )
    if arch not in ("x86_64", "amd64"):
        return Check(
            "platform",
            Status.FAIL,
            f"{facts.os} on {facts.arch}: ZLUDA builds are x86-64 only",
            "Use an x86-64 machine.",
        )
    return Check("platform", Status.OK, f"{facts.os} {facts.arch} (kernel/OS {facts.os_version})")


def check_gpu(facts: HostFacts, fs: HostFs, platform: str) -> Check:
    if facts.gpus:
        labels = "; ".join(g.label() for g in facts.gpus)
        return Check(
            "gpu",
            Status.OK,
            f"{len(facts.gpus)} AMD GPU(s) via {facts.gpu_source}: {labels}",
            details={"gpus": [g.to_dict() for g in facts.gpus]},
        )
    searched = "; ".join(facts.gpu_search)
    if platform == "win32":
        fix = (
            "Install the current AMD Adrenalin driver and the AMD HIP SDK "
            "(https://www.amd.com/en/developer/resources/rocm-hub/hip-sdk.html)."
        )
    elif fs.exists("/dev/kfd"):
        fix = (
            "/dev/kfd exists but no GPU agent is visible: add your user to the render and video groups "
            "(sudo usermod -aG render,video $USER, then log in again) and check `rocminfo`."
        )
    else:
        fix = (
            "Install an AMD GPU with its amdgpu driver and ROCm "
            "(https://rocm.docs.amd.com/projects/install-on-linux/); in a container: "
            "docker run --device=/dev/kfd --device=/dev/dri."
        )
    return Check("gpu", Status.FAIL, f"No AMD GPU found ({searched or 'nothing to ask'})", fix,
                 details={"asked": list(facts.gpu_asked)})


def check_arch(gpu: GpuAgent) -> Check:
    if gpu.gfx is None:
        return Check(
            "gpu_arch",
            Status.WARN,
            f"Could not tell the gfx target of {gpu.name or 'the GPU'}",
            "Install the HIP runtime (ROCm / HIP SDK) so the doctor can ask it for gcnArchName.",
        )
    gen = generation(gpu.gfx)
    if is_rdna_or_newer(gpu.gfx):
        return Check(
            "gpu_arch",
            Status.OK,
            f"{gpu.gfx} ({gen}): RDNA1 or newer, supported by the ZLUDA rewrite",
            details={"gfx": gpu.gfx, "generation": gen},
        )
    return Check(
        "gpu_arch",
        Status.FAIL,
        f"{gpu.gfx} ({gen}) is older than RDNA1: the upstream ZLUDA rewrite needs an RX 5000 (RDNA1) "
        "or newer Radeon",
        "Use an RX 5000 series or newer GPU; Vega/Polaris/Instinct cards are not ZLUDA targets "
        "(use a native ROCm build of torch where ROCm supports the card).",
        details={"gfx": gpu.gfx, "generation": gen},
    )


def check_hidden_gpus(env: Mapping[str, str], visibility: Visibility | None = None) -> Check:
    """The user's ``*_VISIBLE_DEVICES`` leave the workload no GPU (``-1``, ``abc``, an index past the last
    GPU: ROCm's rule, :mod:`zluda_runner.host.visibility`), or one zluda-run cannot tell (a UUID)."""
    names = [v for v in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES") if v in env]
    settings = ", ".join(f"{v}={env[v]!r}" for v in names)
    details: dict[str, object] = {var: env[var] for var in names}
    fix = (f"Unset {' / '.join(names)} or give it a device index that exists (0 is the first GPU; "
           "ROCm hides an entry that is not one, and every entry after it).")
    if visibility is not None and visibility.visible is None:
        return Check("device_order", Status.WARN,
                     "; ".join(visibility.warnings) or f"{settings}: which GPU the workload gets is unknown",
                     fix, details=details)
    said = f" ({'; '.join(visibility.warnings)})" if visibility is not None and visibility.warnings else ""
    return Check(
        "device_order",
        Status.FAIL,
        f"{settings} hides every AMD GPU: HIP and ZLUDA will see no device{said}",
        fix,
        details=details,
    )


def check_device_order(gpus: list[GpuAgent], target: GpuAgent, platform: str,
                       chosen: str | None = None, visibility: Visibility | None = None) -> Check:
    """Which GPU a run uses first. ``chosen``: the ``HIP_VISIBLE_DEVICES`` value zluda-run's
    ``dedicated-gpu`` default sets (``target`` is then the dedicated GPU it shows as device 0).
    ``visibility``: the user's choice as ROCm reads it; a list it cuts short warns."""
    if visibility is not None and visibility.warnings and chosen is None:
        return Check(
            "device_order", Status.WARN,
            f"Device {target.index} ({target.name or target.gfx}) is used first; "
            + "; ".join(visibility.warnings),
            "Give only device indices that exist (0 is the first GPU): ROCm hides an entry that is not one, "
            "and every entry after it.",
            details={"used": target.index, "visible": list(visibility.visible or ())},
        )
    discrete = [g for g in gpus if not g.integrated]
    first = gpus[0] if gpus else target
    if chosen is not None and first.integrated and not target.integrated:
        setter = "set" if platform == "win32" else "export"
        return Check(
            "device_order",
            Status.OK,
            f"HIP lists the integrated {first.name or first.gfx} (device {first.index}) first; zluda-run "
            f"shows the workload the dedicated {target.name or target.gfx} (device {target.index}) as "
            f"device 0 (its dedicated-gpu default: HIP_VISIBLE_DEVICES={chosen})",
            f"Programs started without zluda-run use the integrated GPU first: {setter} "
            f"HIP_VISIBLE_DEVICES={chosen} for them.",
            details={"integrated": first.index, "discrete": target.index, "default": "dedicated-gpu",
                     "HIP_VISIBLE_DEVICES": chosen},
        )
    if target.integrated and discrete:
        best = discrete[0]
        setter = "set" if platform == "win32" else "export"
        return Check(
            "device_order",
            Status.WARN,
            f"Device {target.index} is the integrated {target.name or target.gfx}; HIP and ZLUDA use it "
            f"before the discrete {best.name or best.gfx} (device {best.index})",
            f"{setter} HIP_VISIBLE_DEVICES={best.index} before running (or disable the iGPU in the BIOS).",
            details={"integrated": target.index, "discrete": best.index},
        )
    if target.integrated:
        return Check(
            "device_order",
            Status.OK,
            f"Only an integrated GPU ({target.label()}): it works, with shared system memory",
        )
    return Check(
        "device_order", Status.OK, f"Device {target.index} ({target.name or target.gfx}) is used first"
    )


def windows_driver_version(facts: HostFacts) -> str | None:
    """The AMD display driver's version from the registry, else the HIP runtime's driver version."""
    registry = next((g.driver_version for g in facts.gpus if g.driver_version), None)
    hip_driver = format_hip_version(facts.hip.driver_version) if facts.hip is not None else None
    return registry or (f"HIP driver {hip_driver}" if hip_driver else None)


def check_driver(fs: HostFs) -> Check:
    version = amdgpu_module(fs)
    if version is None:
        return Check(
            "driver",
            Status.FAIL,
            "The amdgpu kernel module is not loaded",
            "Install the amdgpu driver (in-tree or amdgpu-dkms with firmware) and `sudo modprobe amdgpu`.",
        )
    kfd = fs.path("/dev/kfd")
    if not kfd.exists():
        return Check(
            "driver",
            Status.FAIL,
            "amdgpu is loaded but /dev/kfd is missing (no compute support)",
            "Use a kernel built with CONFIG_HSA_AMD; in a container: docker run --device=/dev/kfd.",
        )
    if not os.access(kfd, os.R_OK | os.W_OK):
        return Check(
            "driver",
            Status.FAIL,
            "/dev/kfd is not readable and writable by this user",
            "sudo usermod -aG render,video $USER, then log in again.",
        )
    return Check(
        "driver",
        Status.OK,
        f"amdgpu {version or '(in-tree)'}; /dev/kfd accessible",
        details={"amdgpu_version": version or None},
    )


def check_windows_driver(facts: HostFacts) -> Check:
    """Reads :attr:`HostFacts.driver_version` (:func:`windows_driver_version`)."""
    if facts.driver_version:
        return Check("driver", Status.OK, f"AMD display driver {facts.driver_version}")
    return Check(
        "driver",
        Status.WARN,
        "Could not read the AMD display driver version",
        "Install the current AMD Adrenalin driver (it also provides the HIP runtime, amdhip64_6.dll).",
    )


def check_gpu_hip_rules(facts: HostFacts, gfx: str, rules: Sequence[GpuHipRule]) -> Check | None:
    """The manifest's GPU x HIP rules for the GPU the run uses and the host's HIP (version and origin: a
    distribution's packages, AMD's ROCm, the Windows HIP SDK): a rule broken fails, in the rule's words and
    with its fix and source (the same rules release selection applies). None when there is no HIP version
    to judge."""
    rocm = facts.rocm
    mm = rocm.major_minor if rocm is not None else None
    if rocm is None or mm is None:
        return None
    hip = f"{mm[0]}.{mm[1]}"
    os_name = facts.os if facts.os in ("linux", "windows") else None
    broken = rules_against(rules, gfx, hip, os_name, rocm.kind)
    details: dict[str, object] = {"gfx": gfx, "hip": hip, "hip_from": rocm.kind,
                                  "rules": [r.to_dict() for r in broken]}
    if not broken:
        known = [r for r in rules if gfx in r.gfx]
        said = f"{len(known)} rule(s) for {gfx} hold" if known else f"no rule names {gfx}"
        details["held"] = len(known)
        return Check("gpu_hip", Status.OK, f"{gfx} with {rocm.label} {hip}: {said}", details=details)
    message = "; ".join(r.reason(gfx, hip) for r in broken)
    fix = "; ".join(dict.fromkeys(r.fix for r in broken if r.fix)) or "Install a HIP version the rule names."
    return Check("gpu_hip", Status.FAIL, message, fix[:1].upper() + fix[1:] + ".", details)
