"""Windows HIP SDK conflicts (:mod:`zluda_runner.host.hipsdk`): several SDKs, a HIP runtime mix between
the release and the SDK's math libraries, an SDK without rocBLAS kernels for the GPU. Off Windows each is
``not_applicable`` (neither ok nor failing), never ok."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.paths import default_cache_dir
from zluda_runner.doctor.model import Check, DoctorOptions, Findings, Status
from zluda_runner.host import hipsdk
from zluda_runner.host.facts import HostFacts
from zluda_runner.host.visibility import workload_target
from zluda_runner.release.selection import Resolution

CHECK_IDS = ("hip_sdks", "hip_runtime_mix", "sdk_rocblas")
_STATUS = {"warn": Status.WARN, "fail": Status.FAIL}


def _release_dlls(opts: DoctorOptions, resolution: Resolution | ZludaRunnerError | None,
                  ) -> tuple[tuple[str, ...], str, str]:
    """The amdhip64 DLLs the release the run would use imports (``resolution``: the release check's), and
    where that was read, said and as one word (its DLLs, ``dlls``: ``--zluda-dir`` or the cached copy; else
    the manifest's HIP bounds, ``manifest``, when they name one major; ``none``)."""
    settings = opts.settings
    if settings is not None and settings.zluda_dir is not None:
        folder = Path(settings.zluda_dir)
        return hipsdk.release_hip_dlls(hipsdk.release_dlls(folder)), f"the DLLs of {folder}", "dlls"
    chosen = resolution.chosen if isinstance(resolution, Resolution) else None
    if chosen is None:
        return (), "no release fits (see the release check)", "none"
    from zluda_runner.release.cache import cached_release_dir
    from zluda_runner.release.manifest import resolve_release_root

    cache = Path(settings.cache_dir) if settings and settings.cache_dir else default_cache_dir()
    unpacked = cached_release_dir(cache, chosen.release, chosen.asset)
    name = f"{chosen.release_id} / {chosen.asset.name}"
    if unpacked is not None:
        root = resolve_release_root(unpacked, chosen.asset)
        return hipsdk.release_hip_dlls(hipsdk.release_dlls(Path(root))), f"the DLLs of {name}", "dlls"
    # not downloaded: the newest HIP major its bounds allow is the DLL it prefers (upstream v6 delay-loads
    # amdhip64_7.dll and falls back to amdhip64_6.dll; the fork's builds name one major)
    hip = chosen.asset.hip
    bound = hip.max or hip.min
    m = re.match(r"(\d+)", bound or "")
    if hip.kind == "sdk" and m:
        dll = f"amdhip64_{m.group(1)}.dll" if m.group(1) != "5" else "amdhip64.dll"
        return (dll,), f"the manifest's HIP bounds of {name} (not downloaded)", "manifest"
    return (), f"{name} is not downloaded and its HIP bounds name no HIP SDK", "none"


def _combined(check_id: str, conflicts: Sequence[hipsdk.Conflict], details: Mapping[str, object]) -> Check:
    worst = Status.FAIL if any(c.severity == "fail" for c in conflicts) else Status.WARN
    return Check(check_id, worst, "; ".join(c.message for c in conflicts), " ".join(c.fix for c in conflicts),
                 {**details, "conflicts": [c.to_dict() for c in conflicts]})


def hipsdk_checks(facts: HostFacts, opts: DoctorOptions,
                  resolution: Resolution | ZludaRunnerError | None = None) -> Findings:
    """The three checks: off Windows each ``not_applicable``; without an SDK (or a known GPU target for
    ``sdk_rocblas``) skipped, with why. ``resolution``: the release the run takes (the release check's)."""
    if opts.platform != "win32":
        why = f"Windows HIP SDK check: not applicable on {facts.os}"
        return Findings(tuple(Check(c, Status.NOT_APPLICABLE, why) for c in CHECK_IDS))
    sdks = hipsdk.find_sdks(opts.root, opts.env)
    used = hipsdk.used_sdk(sdks)
    if not sdks or used is None or not used.exists:
        return Findings(skipped=tuple(f"{c} (no HIP SDK found)" for c in CHECK_IDS))
    listed = {"sdks": [s.to_dict() for s in sdks], "used": used.path}
    conflicts = hipsdk.sdk_conflicts(sdks, opts.env)
    if conflicts:
        found = _combined("hip_sdks", conflicts, listed)
    else:
        found = Check("hip_sdks", Status.OK, f"One HIP SDK in use: {used.label()}", details=listed)
    first = Findings.of(found, _runtime_check(opts, used, resolution))
    target = workload_target(facts.gpus, opts.env)[0]
    if target is None or not target.gfx:
        return first + Findings(skipped=("sdk_rocblas (GPU target unknown)",))
    kernels = hipsdk.rocblas_kernels(opts.root, sdks, target.gfx)
    missing = hipsdk.kernel_conflict(kernels, target.gfx)
    per_sdk = {f.sdk.path: f.files for f in kernels}
    if missing is not None:
        return first + Findings.of(_combined("sdk_rocblas", [missing], {"gfx": target.gfx, "files": per_sdk}))
    lacking = [f.sdk.label() for f in kernels if not f.files]
    note = f"; not in {', '.join(lacking)} (not used)" if lacking else ""
    return first + Findings.of(Check("sdk_rocblas", Status.OK,
                                     f"{used.label()} has rocBLAS kernels for {target.gfx}{note}",
                                     details={"gfx": target.gfx, "files": per_sdk}))


def _runtime_check(opts: DoctorOptions, used: hipsdk.HipSdk,
                   resolution: Resolution | ZludaRunnerError | None) -> Check:
    dlls, source, read = _release_dlls(opts, resolution)
    libraries = hipsdk.math_libraries(opts.root, used)
    details: dict[str, object] = {"release_hip": list(dlls), "release_source": source, "release_read": read,
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
