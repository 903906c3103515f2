"""Checks of the HIP runtime, the ROCm / HIP SDK install and the math libraries ZLUDA loads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from zluda_runner.core.envnames import MANIFEST_ENV
from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.settings import Settings
from zluda_runner.doctor.checks_gpu import check_gpu_hip_rules
from zluda_runner.doctor.model import Check, Findings, Status
from zluda_runner.host.facts import HostFacts
from zluda_runner.host.fs import HostFs
from zluda_runner.host.gfx import override_for
from zluda_runner.host.gpus import effective_gfx
from zluda_runner.host.hip import LINUX_LIBRARIES, WINDOWS_LIBRARIES
from zluda_runner.host.hipversion import gone_words
from zluda_runner.host.libraries import (
    HostLibrary,
    files_for_gfx,
    find_first,
    find_library,
    kernel_folder,
    library_name,
)
from zluda_runner.host.model import GpuAgent, RocmInstall
from zluda_runner.host.visibility import workload_target
from zluda_runner.plan.defaults import ADDMM_LT_TORCH, DEFAULTS_OFF
from zluda_runner.plan.defaults_facts import without_hipblaslt, without_miopen
from zluda_runner.plan.unbound import packaged
from zluda_runner.release.selection import Resolution, blocked_needs


def check_hip_runtime(facts: HostFacts, fs: HostFs, env: Mapping[str, str], platform: str) -> Check:
    hip = facts.hip
    if hip is not None and hip.library:
        ver = hip.runtime_version_text or "unknown version"
        status = Status.OK if not hip.error else Status.WARN
        return Check(
            "hip_runtime",
            status,
            f"HIP runtime {hip.library} {ver}" + (f": {hip.error}" if hip.error else ""),
            None if not hip.error else "Check the driver (`dmesg | grep amdgpu`).",
            details={"runtime_version": hip.runtime_version, "driver_version": hip.driver_version},
        )
    names = WINDOWS_LIBRARIES if platform == "win32" else LINUX_LIBRARIES
    lib = find_first(names, env, platform, fs=fs)
    details = {"library": lib.to_dict()}
    if lib.found and hip is None:
        return Check("hip_runtime", Status.OK, f"HIP runtime library present: {lib.path} ({lib.how})",
                     details=details)
    why = hip.error if hip is not None and hip.error else f"looked for {lib.searched()}"
    if lib.found:
        # installed, but the loader does not find it by name -- nor will ZLUDA, which loads it that way
        where = lib.folder()
        fix = (
            f"Add {where} to PATH (the HIP SDK installer normally does)."
            if facts.os == "windows"
            else f"echo {where} | sudo tee /etc/ld.so.conf.d/rocm.conf && sudo ldconfig "
            f"(or add {where} to LD_LIBRARY_PATH)."
        )
        return Check("hip_runtime", Status.FAIL,
                     f"{lib.name} is installed in {where} but could not be loaded ({why})", fix, details)
    fix = (
        "Install the AMD HIP SDK (Windows) matching your ZLUDA build."
        if facts.os == "windows"
        else "Install the HIP runtime (e.g. `sudo apt install hip-runtime-amd` from the ROCm repository)."
    )
    return Check("hip_runtime", Status.FAIL, f"HIP runtime unavailable ({why})", fix, details)


def check_rocm(facts: HostFacts, platform: str,
               release: Resolution | ZludaRunnerError | None = None,
               gone: Sequence[tuple[str, str]] = ()) -> Check:
    """``release``: the release the run takes (the release check's): a missing install's fix names its HIP.
    ``gone``: the HIP variables that name a missing folder
    (:func:`~zluda_runner.host.hipversion.gone_hip_folders`), in ``details["missing_folders"]``."""
    rocm = facts.rocm
    if rocm is None:
        chosen = release.chosen if isinstance(release, Resolution) else None
        needs = (f"{chosen.asset.hip.describe()}, what {chosen.release_id} needs" if chosen
                 else "the HIP the release check names")
        missing: dict[str, Any] = {"missing_folders": [{"variable": v, "path": p} for v, p in gone]
                                   } if gone else {}
        names = " and ".join(v for v, _p in gone)
        forget = f"; or, if it is uninstalled for good, delete {names} from the environment" if gone else ""
        if platform == "win32":
            said = (f"{gone_words(gone)}, and no Program Files\\AMD\\ROCm" if gone
                    else "HIP_PATH unset, no Program Files\\AMD\\ROCm")
            return Check("rocm", Status.FAIL, f"No AMD HIP SDK found ({said})",
                         f"Install the AMD HIP SDK ({needs}){forget}.", missing)
        said = f"/opt/rocm; {gone_words(gone)}" if gone else "/opt/rocm, ROCM_PATH"
        return Check("rocm", Status.FAIL, f"No ROCm installation found ({said})",
                     f"Install ROCm ({needs}): https://rocm.docs.amd.com/projects/install-on-linux/{forget}.",
                     missing)
    label = rocm.label
    details = {"path": str(rocm.path), "version": rocm.version, "source": rocm.version_source,
               **({"package": rocm.package} if rocm.package else {})}
    mm = rocm.major_minor
    if mm is not None and mm < (5, 7):
        return Check(
            "rocm",
            Status.WARN,
            f"{rocm.words()} at {rocm.path} is older than 5.7",
            _newer_hip(label, facts.os, release),
            details,
        )
    note = ""
    if rocm.kind == "hip-sdk" and mm is not None:
        # the lshqqytiger fork's Windows builds: rocm5 for HIP SDK 5.7, rocm6 for 6.x
        asset = {5: "ZLUDA-windows-rocm5", 6: "ZLUDA-windows-rocm6"}.get(mm[0])
        note = f" (fork asset: {asset})" if asset else ""
        details["fork_asset"] = asset
    return Check(
        "rocm",
        Status.OK,
        f"{rocm.words()} at {rocm.path}{note}",
        details=details,
    )


def _newer_hip(label: str, os_name: str, release: Resolution | ZludaRunnerError | None) -> str:
    """The fix for a HIP too old: the HIP the releases built for this OS need (the release check's
    selection), never another OS's build."""
    needs: list[tuple[str, list[str]]] = []
    if isinstance(release, Resolution) and release.chosen is not None:
        needs = [(release.chosen.asset.hip.describe(), [release.chosen.release_id])]
    elif isinstance(release, Resolution):
        needs = [(need, ids) for (kind, need), ids in blocked_needs(release.selection.rejected).items()
                 if kind == "hip"]
    if not needs:
        return f"Install a newer {label}: the release check names what the releases for {os_name} need."
    said = "; ".join(f"{need} for {', '.join(ids)}" for need, ids in needs[:2])
    return (f"Install a newer {label}: ZLUDA's releases for {os_name} need {said}; the release check "
            "names the ways on this system.")


def gpu_hip_rule_check(facts: HostFacts, env: Mapping[str, str], platform: str,
                       settings: Settings | None = None) -> Findings:
    """The manifest's GPU x HIP rules for the GPU the run uses (``gpu_hip``): the manifest ``--manifest`` /
    ``ZLUDA_RUNNER_MANIFEST`` names, else the one in use for ``settings``' cache, else the packaged one."""
    from zluda_runner.release.manifest import load_current_manifest

    skipped = Findings(skipped=("gpu_hip",))
    target = workload_target(facts.gpus, env)[0]
    gfx = effective_gfx(target, env, platform) if target is not None else None
    if gfx is None or facts.rocm is None:
        return skipped
    explicit = settings.manifest if settings is not None and settings.manifest else None
    if explicit is None and env.get(MANIFEST_ENV):
        explicit = Path(env[MANIFEST_ENV])
    try:
        manifest = load_current_manifest(explicit, settings.cache_dir if settings is not None else None)
    except ZludaRunnerError:  # the release check says what is wrong with the manifest
        return skipped
    check = check_gpu_hip_rules(facts, gfx, manifest.gpu_hip_rules)
    return skipped if check is None else Findings.of(check)


def library_checks(facts: HostFacts, fs: HostFs, env: Mapping[str, str], platform: str,
                   settings: Settings | None = None) -> Findings:
    """The manifest's GPU x HIP rules, rocBLAS's and hipBLASLt's kernels for the GPU the run uses (in the
    folders beside the libraries the launch's loader takes: :func:`~zluda_runner.host.libraries.find_library`)
    and MIOpen, found by the finder the plan's dependency checks and defaults read."""
    rules = gpu_hip_rule_check(facts, env, platform, settings)
    enabled = settings.defaults if settings is not None else True
    if platform not in ("win32",) and not platform.startswith("linux"):
        return rules + Findings(skipped=("rocblas", "hipblaslt", "miopen"))
    target = workload_target(facts.gpus, env)[0]
    gfx = effective_gfx(target, env, platform) if target is not None else None
    if facts.rocm is None or target is None or gfx is None:
        blas = Findings(skipped=("rocblas", "hipblaslt"))
    else:
        blas = Findings.of(
            check_rocblas(fs, find_library(library_name("rocblas", platform), env, platform, fs=fs), target,
                          gfx, facts.rocm, platform),
            check_hipblaslt(fs, find_library(library_name("hipblaslt", platform), env, platform, fs=fs), gfx,
                            env, platform, enabled=enabled))
    found = check_miopen(find_library(library_name("miopen", platform), env, platform, fs=fs), env, platform,
                         enabled=enabled)
    return rules + blas + Findings.of(found)


def check_miopen(miopen: HostLibrary, env: Mapping[str, str], platform: str, *, enabled: bool) -> Check:
    """MIOpen, and where it is missing what a run does about it, as the plan decides it
    (:func:`~zluda_runner.plan.defaults_facts.without_miopen`): ZLUDA's cuDNN not bound, torch's cuDNN
    switched off unless the user keeps it on; installing MIOpen is what enables cuDNN."""
    if miopen.found:
        return Check("miopen", Status.OK, f"MIOpen present ({miopen.path}, {miopen.how})",
                     details={"library": miopen.to_dict()})
    looked = miopen.searched()
    cudnn = without_miopen(looked, env, enabled=enabled, platform=platform)
    why_not = "{opt:no_defaults}" if cudnn.why_not == DEFAULTS_OFF else cudnn.why_not  # as the plan's view
    done = (f"switches cuDNN off in a torch workload ({cudnn.setting})" if cudnn.applied else
            f"does not switch cuDNN off ({why_not}): a torch workload's convolutions through cuDNN fail")
    return Check(
        "miopen",
        Status.WARN,
        f"MIOpen not found (looked for {looked}): zluda-run leaves ZLUDA's cuDNN, which runs on it, unbound "
        f"(NVIDIA's own loads in its place) and {done}",
        f"To run cuDNN through ZLUDA, install {packaged(miopen.name)}.",
        {"library": miopen.to_dict(), "default": cudnn.to_dict()},
    )


def _not_found(check_id: str, label: str, lib: HostLibrary, fix: str, status: Status) -> Check:
    return Check(check_id, status, f"{label} not found (looked for {lib.searched()})", fix,
                 {"library": lib.to_dict()})


def check_rocblas(
    fs: HostFs, lib: HostLibrary, gpu: GpuAgent, gfx: str, rocm: RocmInstall, platform: str
) -> Check:
    if lib.path is None:
        return _not_found("rocblas", "rocBLAS", lib, "Install rocBLAS (`sudo apt install rocblas`, or the "
                          "HIP SDK on Windows) and put its folder on LD_LIBRARY_PATH / PATH.", Status.FAIL)
    folder = kernel_folder(lib.path, "rocblas")
    files = files_for_gfx(fs, folder, gfx, "TensileLibrary")
    via = f" (via HSA_OVERRIDE_GFX_VERSION, device is {gpu.gfx})" if gfx != gpu.gfx else ""
    details: dict[str, Any] = {
        "gfx": gfx,
        "device_gfx": gpu.gfx,
        "folder": folder,
        "files": len(files),
        "library": lib.to_dict(),
    }
    if files:
        return Check(
            "rocblas",
            Status.OK,
            f"rocBLAS has kernels for {gfx}{via} ({len(files)} TensileLibrary files)",
            details=details,
        )
    label = f"rocBLAS in {rocm.label} {rocm.version or ''}".rstrip()
    message = f"{label} has no kernels for {gfx}{via}: matrix multiplies will fail"
    override = override_for(gfx)
    if override is None:
        return Check(
            "rocblas",
            Status.FAIL,
            message,
            f"{gfx} is not a rocBLAS target of this release; install a ROCm/HIP SDK release that "
            "lists it, or rocBLAS kernels built for it.",
            details,
        )
    stand_in = files_for_gfx(fs, folder, override.stand_in, "TensileLibrary")
    details["override"] = override.hsa_version
    if platform == "win32":
        fix = (
            f"HSA_OVERRIDE_GFX_VERSION does not apply on Windows: put rocBLAS kernels built for {gfx} "
            f"into {folder} (community ROCm library packages for {gfx})."
        )
    else:
        have = (
            f"{override.stand_in} kernels are present"
            if stand_in
            else f"{override.stand_in} kernels needed too"
        )
        fix = (
            f"export HSA_OVERRIDE_GFX_VERSION={override.hsa_version} to run {override.stand_in} kernels on "
            f"{gfx} ({have})."
        )
    return Check("rocblas", Status.FAIL, message, fix, details)


def check_hipblaslt(fs: HostFs, lib: HostLibrary, gfx: str, env: Mapping[str, str], platform: str, *,
                    enabled: bool) -> Check:
    """hipBLASLt and its kernels for ``gfx``; where it is missing, what a run does about it, as the plan
    decides it (:func:`~zluda_runner.plan.defaults_facts.without_hipblaslt`): ZLUDA's cuBLASLt not bound,
    torch's addmm kept off cuBLASLt unless the user says otherwise."""
    fix = "Set DISABLE_ADDMM_CUDA_LT=1 so torch does not route addmm/linear through cuBLASLt."
    if lib.path is None:
        lt = without_hipblaslt(env, enabled=enabled, platform=platform)
        why_not = "{opt:no_defaults}" if lt.why_not == DEFAULTS_OFF else lt.why_not  # as the plan's view
        done = (f"sets {lt.setting} in a torch workload from {ADDMM_LT_TORCH} on" if lt.applied else
                f"does not set {lt.setting} ({why_not}): torch's addmm through cuBLASLt fails")
        return Check(
            "hipblaslt", Status.WARN,
            f"hipBLASLt not found (looked for {lib.searched()}): zluda-run leaves ZLUDA's cuBLASLt, which "
            f"runs on it, unbound (NVIDIA's own loads in its place) and {done}",
            f"To run cuBLASLt through ZLUDA, install {packaged(lib.name)}.",
            {"library": lib.to_dict(), "default": lt.to_dict()})
    folder = kernel_folder(lib.path, "hipblaslt")
    files = files_for_gfx(fs, folder, gfx)
    if files:
        return Check("hipblaslt", Status.OK, f"hipBLASLt has kernels for {gfx} ({len(files)} files)")
    return Check(
        "hipblaslt",
        Status.WARN,
        f"hipBLASLt has no kernels for {gfx}: cuBLASLt calls will fail",
        fix,
        {"gfx": gfx, "folder": folder, "library": lib.to_dict()},
    )
