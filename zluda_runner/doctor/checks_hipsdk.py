"""Windows HIP SDK conflicts (:mod:`zluda_runner.host.hipsdk`): several SDKs, a HIP runtime mix between
the release and the SDK's math libraries, an SDK without rocBLAS kernels for the GPU. Not applicable on
Linux: the doctor lists them as skipped there, never as ok."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.paths import default_cache_dir
from zluda_runner.doctor.model import Check, DoctorReport, ResolvedOptions, Status
from zluda_runner.host import hipsdk
from zluda_runner.host.gpus import target_gpu
from zluda_runner.host.quick import hip_found

CHECK_IDS = ("hip_sdks", "hip_runtime_mix", "sdk_rocblas")
_STATUS = {"warn": Status.WARN, "fail": Status.FAIL}


def _release_dlls(opts: ResolvedOptions) -> tuple[tuple[str, ...], str]:
    """The amdhip64 DLLs the release the run would use imports, and where that was read (its DLLs:
    ``--zluda-dir`` or the cached copy; else the manifest's HIP bounds, when they name one major)."""
    settings = opts.settings
    if settings is not None and settings.zluda_dir is not None:
        folder = Path(settings.zluda_dir)
        return hipsdk.release_hip_dlls(hipsdk.release_dlls(folder)), f"the DLLs of {folder}"
    from zluda_runner.release.cache import cached_release_dir
    from zluda_runner.release.manifest import load_current_manifest, resolve_release_root
    from zluda_runner.release.selection import choose

    try:
        manifest = load_current_manifest(settings.manifest if settings else None,
                                         settings.cache_dir if settings else None)
        chosen = choose(manifest, hip_found(opts.env, opts.root, opts.platform), os="windows",
                        release=settings.release if settings else None)
        cache = Path(settings.cache_dir) if settings and settings.cache_dir else default_cache_dir()
        unpacked = cached_release_dir(cache, chosen.release, chosen.asset)
    except ZludaRunnerError:
        return (), "no release fits (see the release check)"
    name = f"{chosen.release_id} / {chosen.asset.name}"
    if unpacked is not None:
        root = resolve_release_root(unpacked, chosen.asset)
        return hipsdk.release_hip_dlls(hipsdk.release_dlls(Path(root))), f"the DLLs of {name}"
    # not downloaded: the newest HIP major its bounds allow is the DLL it prefers (upstream v6 delay-loads
    # amdhip64_7.dll and falls back to amdhip64_6.dll; the fork's builds name one major)
    hip = chosen.asset.hip
    bound = hip.max or hip.min
    m = re.match(r"(\d+)", bound or "")
    if hip.kind == "sdk" and m:
        dll = f"amdhip64_{m.group(1)}.dll" if m.group(1) != "5" else "amdhip64.dll"
        return (dll,), f"the manifest's HIP bounds of {name} (not downloaded)"
    return (), f"{name} is not downloaded and its HIP bounds name no HIP SDK"


def _combined(check_id: str, conflicts: Sequence[hipsdk.Conflict], details: Mapping[str, object]) -> Check:
    worst = Status.FAIL if any(c.severity == "fail" for c in conflicts) else Status.WARN
    return Check(check_id, worst, "; ".join(c.message for c in conflicts), " ".join(c.fix for c in conflicts),
                 {**details, "conflicts": [c.to_dict() for c in conflicts]})


def hipsdk_checks(report: DoctorReport, opts: ResolvedOptions) -> None:
    """Append the three checks (or, off Windows / without an SDK, say why they are skipped)."""
    if opts.platform != "win32":
        report.skipped += [f"{c} (not applicable on {report.facts.os})" for c in CHECK_IDS]
        return
    sdks = hipsdk.find_sdks(opts.root, opts.env)
    used = hipsdk.used_sdk(sdks)
    if not sdks or used is None or not used.exists:
        report.skipped += [f"{c} (no HIP SDK found)" for c in CHECK_IDS]
        return
    listed = {"sdks": [s.to_dict() for s in sdks], "used": used.path}
    conflicts = hipsdk.sdk_conflicts(sdks, opts.env)
    if conflicts:
        report.checks.append(_combined("hip_sdks", conflicts, listed))
    else:
        report.checks.append(Check("hip_sdks", Status.OK, f"One HIP SDK in use: {used.label()}",
                                   details=listed))
    report.checks.append(_runtime_check(opts, used))
    target = target_gpu(report.facts.gpus, opts.env) if report.facts.gpus else None
    if target is None or not target.gfx:
        report.skipped.append("sdk_rocblas (GPU target unknown)")
        return
    facts = hipsdk.rocblas_kernels(opts.root, sdks, target.gfx)
    missing = hipsdk.kernel_conflict(facts, target.gfx)
    per_sdk = {f.sdk.path: f.files for f in facts}
    if missing is not None:
        report.checks.append(_combined("sdk_rocblas", [missing], {"gfx": target.gfx, "files": per_sdk}))
        return
    lacking = [f.sdk.label() for f in facts if not f.files]
    note = f"; not in {', '.join(lacking)} (not used)" if lacking else ""
    report.checks.append(Check("sdk_rocblas", Status.OK,
                               f"{used.label()} has rocBLAS kernels for {target.gfx}{note}",
                               details={"gfx": target.gfx, "files": per_sdk}))


def _runtime_check(opts: ResolvedOptions, used: hipsdk.HipSdk) -> Check:
    dlls, source = _release_dlls(opts)
    libraries = hipsdk.math_libraries(opts.root, used)
    details: dict[str, object] = {"release_hip": list(dlls), "release_source": source,
                                  "math_libraries": [lib.to_dict() for lib in libraries]}
    if not dlls:
        return Check("hip_runtime_mix", Status.OK,
                     f"HIP runtime of the release not known ({source}): not compared", details=details)
    mix = hipsdk.runtime_mix(opts.root, opts.env, used, dlls)
    if mix is not None:
        return _combined("hip_runtime_mix", [mix], details)
    loads = sorted({d for lib in libraries for d in lib.hip_dlls})
    theirs = (f"its math libraries load {', '.join(loads)}" if loads
              else "no math library that imports HIP found")
    return Check("hip_runtime_mix", Status.OK,
                 f"The release loads {', '.join(dlls)} ({source}); {theirs}", details=details)
