"""``run_doctor``: gather the host's facts, run every check, decide the exit code.

Exit code contract (:mod:`zluda_runner.core.exitcodes`): ``OK`` when no check failed
(warnings allowed; ``strict`` makes warnings count as failures), ``CHECK_FAILED`` when
at least one did.  ``ERROR`` stays "the doctor itself could not run" (a
:class:`~zluda_runner.core.errors.ZludaRunnerError`) and ``USAGE`` is click's.
Anything that runs code of the host (the HIP runtime, ``rocminfo``, the target python)
is skipped under a fake root unless injected.
"""

from __future__ import annotations

import dataclasses
import platform as _platform
import sys
from collections.abc import Sequence

from zluda_runner.core import exitcodes
from zluda_runner.doctor.checks_gpu import (
    check_arch,
    check_device_order,
    check_driver,
    check_gpu,
    check_hidden_gpus,
    check_platform,
    check_windows_driver,
    windows_driver_version,
)
from zluda_runner.doctor.checks_hipsdk import hipsdk_checks
from zluda_runner.doctor.checks_release import (
    check_cached_releases,
    check_compile_cache,
    check_history,
    check_native_wheels,
    check_release,
    native_for,
    release_resolution,
)
from zluda_runner.doctor.checks_rocm import check_hip_runtime, check_rocm, library_checks
from zluda_runner.doctor.checks_torch import check_torch
from zluda_runner.doctor.model import (
    ENV_OF_INTEREST,
    Check,
    DoctorOptions,
    DoctorReport,
    Findings,
    Status,
)
from zluda_runner.host.compile_cache import compile_cache_dirs, inspect_compile_cache
from zluda_runner.host.facts import HostFacts
from zluda_runner.host.fs import HostFs
from zluda_runner.host.gpus import discover_gpus
from zluda_runner.host.hipversion import gone_hip_folders
from zluda_runner.host.quick import amdgpu_driver
from zluda_runner.host.rocm import find_rocm
from zluda_runner.host.tools import ToolRunner, run_tool
from zluda_runner.host.visibility import workload_target
from zluda_runner.plan.defaults import HostGpu
from zluda_runner.plan.defaults_facts import REGISTRY, gpu_choice_env

HIP_VISIBLE = "HIP_VISIBLE_DEVICES"


def run_doctor(options: DoctorOptions | None = None) -> DoctorReport:
    """Gather host facts and run every check.  Never raises for a missing GPU/ROCm/torch."""
    opts = options or DoctorOptions()
    env = opts.env
    fs = HostFs(opts.root)
    tools: ToolRunner | None = run_tool if opts.run_tools else None
    rocm = find_rocm(fs, env, opts.platform, tools)
    found = discover_gpus(
        fs,
        opts.platform,
        hip_query=opts.hip_query,
        tools=tools,
        rocm=rocm,
        use_registry=opts.root is None,
    )
    facts = HostFacts(
        os={"win32": "windows", "darwin": "macos"}.get(opts.platform, opts.platform),
        arch=opts.machine,
        os_version=_platform.release(),
        python=sys.version.split()[0],
        root=opts.root,
        env={k: env[k] for k in ENV_OF_INTEREST if env.get(k)},
        rocm=rocm,
        hip=found.hip,
        gpus=found.gpus,
        gpu_source=found.source,
        gpu_search=[] if found.gpus else found.tried_text(),
        gpu_asked=[] if found.gpus else [source for source, _said in found.tried],
    )
    if opts.platform.startswith("linux"):
        facts = dataclasses.replace(facts, driver_version=amdgpu_driver(fs))
    elif opts.platform == "win32":
        facts = dataclasses.replace(facts, driver_version=windows_driver_version(facts))
    dirs = [fs.path(d) for d in compile_cache_dirs(opts.platform, env, opts.home)]
    compile_cache = inspect_compile_cache(dirs)
    facts = dataclasses.replace(facts, compile_cache=compile_cache)
    findings = Findings.of(check_platform(facts), skipped=("hip_query",) if opts.hip_query is None else ())
    findings += Findings.of(check_gpu(facts, fs, opts.platform))
    run_env = _workload_env(facts, opts)
    target, visibility = workload_target(facts.gpus, run_env)  # the user's choice read as ROCm reads it
    if target is not None:
        chosen = run_env.get(HIP_VISIBLE) if run_env != env else None
        findings += Findings.of(check_arch(target),
                                check_device_order(facts.gpus, target, opts.platform, chosen=chosen,
                                                   visibility=visibility))
    elif facts.gpus:
        findings += Findings.of(check_hidden_gpus(env, visibility), skipped=("gpu_arch",))
    else:
        findings += Findings(skipped=("gpu_arch", "device_order"))
    if opts.platform.startswith("linux"):
        findings += Findings.of(check_driver(fs))
    elif opts.platform == "win32":
        findings += Findings.of(check_windows_driver(facts))
    torch = check_torch(opts) if opts.check_torch else None
    resolution = release_resolution(facts, dataclasses.replace(opts, env=run_env), torch)  # the run's own
    findings += Findings.of(check_hip_runtime(facts, fs, env, opts.platform),
                            check_rocm(facts, opts.platform, resolution, gone_hip_folders(opts.root, env,
                                                                                          opts.platform)))
    findings += library_checks(facts, fs, run_env, opts.platform, settings=opts.settings)
    findings += hipsdk_checks(facts, opts, resolution)
    findings += Findings.of(torch, skipped=() if torch is not None else ("torch",))
    native = native_for(resolution)
    findings += Findings.of(check_release(facts, resolution), check_native_wheels(native),
                            check_cached_releases(opts),
                            check_history(target.gfx if target is not None else None, opts))
    findings += Findings.of(check_compile_cache(compile_cache))
    return DoctorReport(facts=facts, checks=findings.checks, skipped=findings.skipped,
                        exit_code=exit_code(findings.checks, strict=opts.strict), native_wheels=native)


def _workload_env(facts: HostFacts, opts: DoctorOptions) -> dict[str, str]:
    """The environment a workload started by zluda-run gets its GPUs from: the user's, plus the
    ``dedicated-gpu`` default's ``HIP_VISIBLE_DEVICES`` where it applies (an integrated and a dedicated
    GPU, no choice of the user's, defaults on, HIP's order known): the doctor judges the GPU the run
    will really use, by the decision the plan makes
    (:func:`~zluda_runner.plan.defaults_facts.gpu_choice_env`)."""
    source = REGISTRY if facts.gpu_source == "registry" else facts.gpu_source
    gpus = tuple(HostGpu(g.index, g.name, g.gfx, g.integrated,
                         f"{facts.gpu_source}: {'integrated' if g.integrated else 'dedicated'}")
                 for g in facts.gpus)
    enabled = opts.settings.defaults if opts.settings is not None else True
    return gpu_choice_env(gpus, source, opts.env, enabled=enabled, platform=opts.platform)


def exit_code(checks: Sequence[Check], *, strict: bool = False) -> int:
    """``CHECK_FAILED`` when a check failed (with ``strict``: or warned), else ``OK``. A check that is
    ``not_applicable`` (like a skipped one) counts neither way, with or without ``strict``."""
    counted = (Status.FAIL, Status.WARN) if strict else (Status.FAIL,)
    failed = any(c.status in counted for c in checks)
    return exitcodes.CHECK_FAILED if failed else exitcodes.OK
