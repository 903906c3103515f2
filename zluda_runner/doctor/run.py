"""``run_doctor``: gather the host's facts, run every check, decide the exit code.

Exit code contract (:mod:`zluda_runner.core.exitcodes`): ``OK`` when no check failed
(warnings allowed; ``strict`` makes warnings count as failures), ``CHECK_FAILED`` when
at least one did.  ``ERROR`` stays "the doctor itself could not run" (a
:class:`~zluda_runner.core.errors.ZludaRunnerError`) and ``USAGE`` is click's.
Anything that runs code of the host (the HIP runtime, ``rocminfo``, the target python)
is skipped under a fake root unless injected.
"""

from __future__ import annotations

import platform as _platform
import sys

from zluda_runner.core import exitcodes
from zluda_runner.doctor.checks_gpu import (
    check_arch,
    check_device_order,
    check_driver,
    check_gpu,
    check_hidden_gpus,
    check_platform,
    check_windows_driver,
)
from zluda_runner.doctor.checks_hipsdk import hipsdk_checks
from zluda_runner.doctor.checks_release import (
    check_cached_releases,
    check_compile_cache,
    check_history,
    check_release,
)
from zluda_runner.doctor.checks_rocm import check_hip_runtime, check_rocm, library_checks
from zluda_runner.doctor.checks_torch import check_torch
from zluda_runner.doctor.model import ENV_OF_INTEREST, Check, DoctorOptions, DoctorReport, Status
from zluda_runner.host.compile_cache import compile_cache_dirs, inspect_compile_cache
from zluda_runner.host.fs import HostFs
from zluda_runner.host.gpus import discover_gpus, target_gpu
from zluda_runner.host.model import HostFacts
from zluda_runner.host.rocm import find_rocm
from zluda_runner.host.tools import ToolRunner, run_tool


def run_doctor(options: DoctorOptions | None = None) -> DoctorReport:
    """Gather host facts and run every check.  Never raises for a missing GPU/ROCm/torch."""
    opts = (options or DoctorOptions()).resolved()
    env = opts.env
    fs = HostFs(opts.root)
    tools: ToolRunner | None = run_tool if opts.run_tools else None
    facts = HostFacts(
        os={"win32": "windows", "darwin": "macos"}.get(opts.platform, opts.platform),
        arch=opts.machine,
        os_version=_platform.release(),
        python=sys.version.split()[0],
        root=opts.root,
        env={k: env[k] for k in ENV_OF_INTEREST if env.get(k)},
    )
    report = DoctorReport(facts=facts)
    report.checks.append(check_platform(facts))

    facts.rocm = find_rocm(fs, env, opts.platform, tools)
    found = discover_gpus(
        fs,
        opts.platform,
        hip_query=opts.hip_query,
        tools=tools,
        rocm=facts.rocm,
        use_registry=opts.root is None,
    )
    facts.hip, facts.gpus, facts.gpu_source = found.hip, found.gpus, found.source
    if not found.gpus:
        facts.gpu_search = found.tried
    if opts.hip_query is None:
        report.skipped.append("hip_query")
    report.checks.append(check_gpu(facts, fs, opts.platform))
    target = target_gpu(facts.gpus, env) if facts.gpus else None
    if target is not None:
        report.checks.append(check_arch(target))
        report.checks.append(check_device_order(facts.gpus, target, opts.platform))
    elif facts.gpus:
        report.checks.append(check_hidden_gpus(env))
        report.skipped.append("gpu_arch")
    else:
        report.skipped += ["gpu_arch", "device_order"]
    if opts.platform.startswith("linux"):
        report.checks.append(check_driver(facts, fs))
    elif opts.platform == "win32":
        report.checks.append(check_windows_driver(facts))
    report.checks.append(check_hip_runtime(facts, fs))
    report.checks.append(check_rocm(facts, opts.platform))
    library_checks(report, fs, env, opts.platform, settings=opts.settings)
    hipsdk_checks(report, opts)
    torch: Check | None = None
    if opts.check_torch:
        torch = check_torch(opts)
        report.checks.append(torch)
    else:
        report.skipped.append("torch")
    report.checks.append(check_release(report, opts, torch))
    report.checks.append(check_cached_releases(opts))
    history = check_history(target.gfx if target is not None else None, opts)
    if history is not None:
        report.checks.append(history)
    dirs = [fs.path(d) for d in compile_cache_dirs(opts.platform, env, opts.home)]
    facts.compile_cache = inspect_compile_cache(dirs)
    report.checks.append(check_compile_cache(facts.compile_cache))
    report.exit_code = exit_code(report, strict=opts.strict)
    return report


def exit_code(report: DoctorReport, *, strict: bool = False) -> int:
    """``CHECK_FAILED`` when a check failed (with ``strict``: or warned), else ``OK``."""
    failed = report.count(Status.FAIL) + (report.count(Status.WARN) if strict else 0)
    return exitcodes.CHECK_FAILED if failed else exitcodes.OK
