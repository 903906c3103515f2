"""Checks that join the host with the rest of zluda-runner: which manifest release fits this host
and its torch, which releases are cached, and ZLUDA's compile cache."""

from __future__ import annotations

import re
from pathlib import Path

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.paths import default_cache_dir
from zluda_runner.core.settings import Settings
from zluda_runner.core.units import format_bytes
from zluda_runner.doctor.model import Check, DoctorOptions, Status
from zluda_runner.host.compile_cache import CompileCacheInfo
from zluda_runner.host.facts import HostFacts
from zluda_runner.host.gpus import effective_gfx
from zluda_runner.host.quick import hip_found
from zluda_runner.host.visibility import workload_target
from zluda_runner.release.cache import list_cache, verify_cache
from zluda_runner.release.native import NativeWheels, native_wheels
from zluda_runner.release.selection import Resolution, nothing_fits


def _cuda_major(torch: Check | None) -> int | None:
    cuda = (torch.details.get("cuda") if torch is not None else None) or ""
    m = re.match(r"(\d+)", str(cuda))
    return int(m.group(1)) if m else None


def release_resolution(facts: HostFacts, opts: DoctorOptions,
                       torch: Check | None) -> Resolution | ZludaRunnerError | None:
    """The release the run would take (:func:`~zluda_runner.conduct.resolve.resolve_release` on the doctor's
    facts: HIP, the run's GPU, the torch check's CUDA), for every check that names a release."""
    if facts.os not in ("linux", "windows"):
        return None
    from zluda_runner.conduct.resolve import resolve_release

    target = workload_target(facts.gpus, opts.env)[0]
    gfx = effective_gfx(target, opts.env, opts.platform) if target is not None else None
    try:
        return resolve_release(opts.settings or Settings(), os_name=facts.os, read_host=False,
                               found=hip_found(opts.env, opts.root, opts.platform), gfx=gfx,
                               cuda=_cuda_major(torch))
    except ZludaRunnerError as exc:  # ManifestError / SelectionError carry their own hint
        return exc


def check_release(facts: HostFacts, resolution: Resolution | ZludaRunnerError | None) -> Check:
    """The run's own verdict (:func:`release_resolution`, in the same words): a host no release fits
    fails here as the run is refused."""
    if resolution is None:
        return Check(
            "release", Status.FAIL, f"No ZLUDA release is built for {facts.os}", "Use Linux or Windows."
        )
    if isinstance(resolution, ZludaRunnerError):
        return Check("release", Status.WARN, f"Could not choose a release: {resolution.message}",
                     resolution.hint or "Run {cmd:releases} to see what exists.")
    chosen = resolution.chosen
    if chosen is None:
        exc = nothing_fits(resolution, said_by="doctor")
        return Check("release", Status.FAIL, exc.message, exc.hint,
                     {"rejected": [r.to_dict() for r in resolution.selection.rejected]})
    c, found = resolution.constraints, resolution.found
    wanted = (f"{facts.os}, {found.text if found else 'no HIP/ROCm found'}{f', {c.gfx}' if c.gfx else ''}, "
              f"torch CUDA {c.cuda or 'any'}")
    return Check(
        "release",
        Status.OK,
        f"Release that fits ({wanted}): {chosen.release_id} / {chosen.asset.name}",
        details=chosen.summary(),
    )


def native_for(resolution: Resolution | ZludaRunnerError | None) -> NativeWheels | None:
    """Whether AMD publishes native ROCm PyTorch wheels for the run's GPU on this OS, by the manifest the
    run's release comes from (:func:`~zluda_runner.release.native.native_wheels`, as ``releases`` says it)."""
    if not isinstance(resolution, Resolution):
        return None
    c = resolution.constraints
    return native_wheels(resolution.manifest, c.gfx, c.os)


def check_native_wheels(native: NativeWheels | None) -> Check | None:
    """``native_rocm``: where the manifest's data says this GPU has native wheels, the one line that says so
    with the command comparing them with ZLUDA on the user's workload; no check elsewhere (the report's
    ``native_wheels`` still says what is known)."""
    line = native.line() if native is not None else None
    if native is None or line is None:
        return None
    return Check("native_rocm", Status.OK, line, details=native.to_dict())


def check_cached_releases(opts: DoctorOptions) -> Check:
    cache_dir = opts.settings.cache_dir if opts.settings else default_cache_dir()
    try:
        entries = list_cache(Path(cache_dir))
    except Exception as exc:  # a broken cache folder is reported, not raised
        # its own message and hint (str() of our error carries a "hint:" line of its own)
        hint = exc.hint if isinstance(exc, ZludaRunnerError) else None
        return Check(
            "cached_releases",
            Status.WARN,
            f"Could not list cached releases: {exc.message if isinstance(exc, ZludaRunnerError) else exc}",
            hint or f"Check the cache folder {cache_dir} (or {{cmd:cache clean}}).",
        )
    names = [f"{e.release_id}/{e.asset}" for e in entries]
    details: dict[str, object] = {"cache_dir": str(cache_dir), "releases": names}
    changed = [r for r in verify_cache(Path(cache_dir)) if r.problems]  # every file hashed
    if changed:
        details["changed"] = [r.to_dict() for r in changed]
        first = changed[0]
        message = (f"{len(changed)} cached release(s) changed since they were installed: "
                   f"{first.release_id}: {first.problems[0]}")
        fix = (f"{{cmd:fetch {first.release_id} --reinstall}} puts back the verified copy "
               "(antivirus or another tool may have changed it)")
        return Check("cached_releases", Status.FAIL, message, fix, details)
    if not names:
        return Check(
            "cached_releases", Status.OK, f"No ZLUDA release cached yet in {cache_dir}", details=details
        )
    return Check(
        "cached_releases", Status.OK, f"{len(names)} cached release(s): {', '.join(names)}", details=details
    )


def check_compile_cache(info: CompileCacheInfo) -> Check:
    where = ", ".join(str(d) for d in info.dirs)
    details = {"dirs": [str(d) for d in info.dirs], "bytes": info.total_bytes, "files": info.file_count}
    if info.file_count == 0:
        return Check(
            "compile_cache",
            Status.OK,
            f"ZLUDA compile cache empty ({where}): the first run of a workload compiles "
            "its GPU code and can take minutes",
            details=details,
        )
    return Check(
        "compile_cache",
        Status.OK,
        f"ZLUDA compile cache: {info.file_count} file(s), {format_bytes(info.total_bytes)} ({where})",
        details=details,
    )




def check_history(gfx: str | None, opts: DoctorOptions) -> Check | None:
    """What the results store knows for this GPU target: releases that failed here before."""
    if not gfx:
        return None
    from zluda_runner.results.queries import failed_releases_for_gpu, summary_for_gpu
    from zluda_runner.results.schema import ResultsStoreError

    try:
        failed = failed_releases_for_gpu(gfx, settings=opts.settings)
        known = summary_for_gpu(gfx, settings=opts.settings)
    except ResultsStoreError as exc:
        return Check("history", Status.WARN, f"The results store could not be read: {exc.message}",
                     exc.hint or "Check {opt:results_db}, or move the results.db file aside.")
    if not failed and not known:
        return None
    lines = [s.text() for s in known] + [f"failed before: {f.text()}" for f in failed]
    status = Status.WARN if failed else Status.OK
    fix = f"See {{cmd:results list --gfx {gfx}}} and {{cmd:results show ID}}." if failed else None
    return Check("history", status, f"Recorded runs on {gfx}: " + "; ".join(lines), fix,
                 {"failed": [f.to_dict() for f in failed], "known": [s.to_dict() for s in known]})
