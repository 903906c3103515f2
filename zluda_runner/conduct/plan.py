"""``plan_run``: inspect -> release -> plan, cached by the identities (path, size, mtime) of every file
it was computed from, so a repeated ``zluda-run python infer.py`` skips inspection. The heavy stages are
imported inside functions: a cached launch stays fast (benchmarks/launch_overhead.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zluda_runner.conduct.context import RunContext, run_context
from zluda_runner.core import observe
from zluda_runner.core.fsutil import atomic_write_json
from zluda_runner.core.paths import CachePaths, real_path
from zluda_runner.core.settings import Settings
from zluda_runner.core.version import __version__
from zluda_runner.launch.process import command_path
from zluda_runner.plan.model import ShimPlan

if TYPE_CHECKING:
    from zluda_runner.conduct.resolve import ReleaseSource, TargetChoice
    from zluda_runner.inspection.profile import TargetProfile
    from zluda_runner.plan.defaults import DefaultsFacts
    from zluda_runner.release.layout import ReleaseLayout

# Bumped when what a plan holds, or how it is computed, changes within one released version.
PLAN_CACHE_FORMAT = 7  # 7: a stand-in whose ROCm library is missing is "unbound"
# (ZLUDA_RUNNER_ROOT: a fake host tree is another host, whose ROCm the shims' dependencies are found in)
_ENV_KEYS = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT", "PATH", "ROCM_PATH", "HIP_PATH",
             "ZLUDA_RUNNER_ROOT")



PLAN_BYTES = 64 << 20  # a cache entry is read whole; one of a large torch is a few hundred KiB


def _stat_id(path: str) -> list[int] | None:
    """A file's identity as the plan cache keeps it (size, modification time), observed
    (:mod:`zluda_runner.core.observe`: the launch memo makes it again)."""
    return observe.stat_id(path)


def _command_identity(argv: Sequence[str], settings: Settings) -> dict[str, Any]:
    """What decides the target (see :func:`choose_target`), without importing the inspector.

    The choice is a function of ``--python``, else of the file the command's first word
    runs (its ``#!`` line names the interpreter; PATH is part of the key too), so a cached
    plan is found without working the choice out again.
    """
    if settings.python:
        py = observe.realpath(observe.which(settings.python) or settings.python)
        return {"python": py, "python_stat": _stat_id(py)}
    if not argv:
        py = observe.realpath(sys.executable)
        return {"python": py, "python_stat": _stat_id(py)}
    exe = command_path(argv[0])
    if exe is None:
        return {"command": argv[0], "command_stat": None}
    real = observe.realpath(exe)
    return {"command": real, "command_stat": _stat_id(real)}


def _cache_key(ctx: RunContext) -> str:
    settings, env = ctx.settings, ctx.env
    ident: dict[str, Any] = {
        "version": __version__,
        "format": PLAN_CACHE_FORMAT,
        **_command_identity(ctx.argv, settings),
        "zluda_dir": str(settings.zluda_dir) if settings.zluda_dir else None,
        "release": settings.release,
        "manifest": str(settings.manifest) if settings.manifest else None,
        "env": {k: env.get(k) for k in _ENV_KEYS},
        "hip_env": sorted((k.upper(), v) for k, v in env.items() if k.upper().startswith("HIP_PATH")),
        "gfx": ctx.gfx,  # GPU x HIP rules: another GPU (HIP_VISIBLE_DEVICES) may pick another
    }
    if ident["manifest"]:
        ident["manifest_stat"] = _stat_id(ident["manifest"])
    text = json.dumps(ident, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _inputs_of(target: TargetProfile, layout: ReleaseLayout, choice: TargetChoice,
               extra: Sequence[str] = ()) -> dict[str, list[int] | None]:
    files: set[str] = set()
    for chosen in (choice.python, choice.binary):
        if chosen:
            files.add(real_path(shutil.which(chosen) or chosen))
    for obj in target.objects:
        files.add(obj.path)
    for lib in target.libraries:
        if lib.resolved and lib.resolved.path:
            files.add(lib.resolved.path)
    torch = target.torch
    if torch and torch.path:
        files.add(str(Path(torch.path) / "version.py"))
        files.add(str(Path(torch.path) / "lib"))
    if target.startup is not None and target.startup.pth_file:
        files.add(target.startup.pth_file)  # an edited ._pth (import site on or off) changes the hook
    for shim in layout.shims:
        files.add(shim.path)
    files.add(layout.root)
    files.update(extra)
    return {f: _stat_id(f) for f in sorted(files)}


def _plan_digest(inputs: object, plan: object) -> str:
    """What a cache entry's payload hashes to: an entry not exactly as written (a torn or edited file, a
    wrong type anywhere in it) is never carried out, it is planned again."""
    text = json.dumps({"inputs": inputs, "plan": plan}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _load_cached_plan(path: Path) -> ShimPlan | None:
    """The plan cached at ``path`` while every file it was computed from is unchanged; None (plan again)
    for anything else: no file, a corrupt one, one whose payload is not as it was written."""
    raw = observe.read(path, PLAN_BYTES)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    inputs, plan = data.get("inputs"), data.get("plan")
    if not isinstance(inputs, dict) or not inputs or not isinstance(plan, dict):
        return None
    if data.get("sha256") != _plan_digest(inputs, plan):
        return None
    if any(_stat_id(f) != ident for f, ident in inputs.items()):
        return None
    try:
        return ShimPlan.from_dict(plan)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _store_plan(path: Path, plan: ShimPlan, inputs: Mapping[str, object]) -> None:
    payload = plan.to_dict()
    plain_inputs = json.loads(json.dumps(inputs))  # as it reads back (tuples as lists)
    atomic_write_json(path, {"inputs": plain_inputs, "plan": payload,
                             "sha256": _plan_digest(plain_inputs, json.loads(json.dumps(payload)))},
                      compact=True)


def plan_run(ctx: RunContext, *, use_cache: bool = True, trust_on_first_use: bool = False,
             download: bool = True) -> RunContext:
    """``ctx`` planned: the target its command runs inspected (or its cached plan read), the release
    resolved for it and the plan made (cached), each once: the context's ``target``, ``resolution`` and
    ``plan``. ``download=False`` (``zluda-run plan``) never downloads: an uncached release is planned from
    the manifest."""
    settings, argv, run_env = ctx.settings, ctx.argv, ctx.env
    cache_file = CachePaths(settings.cache_dir).plans / f"{_cache_key(ctx)}.json"
    if use_cache:
        cached = _load_cached_plan(cache_file)
        if cached is not None:  # the host is judged with the cached target's CUDA: nothing inspected
            if settings.zluda_dir is None:  # (a --zluda-dir run resolves no release: none is imported)
                from zluda_runner.conduct.resolve import resolved
                from zluda_runner.release.selection import parse_cuda

                ctx = resolved(ctx, os_name=cached.os, cuda=parse_cuda(cached.target.cuda))
            return _planned(ctx, dataclasses.replace(cached, argv=tuple(argv)))
    observe.taint("no warm plan")  # inspected and planned: what that read is the plan cache's to check
    from zluda_runner.conduct.resolve import (
        assumed_target,
        choose_target,
        inspect_target,
        release_for,
        resolved,
    )
    from zluda_runner.core.errors import ZludaRunnerError
    from zluda_runner.plan.build import make_plan
    from zluda_runner.release.selection import host_os

    choice = choose_target(argv, settings)
    try:
        profile = inspect_target(choice, settings, run_env)
    except ZludaRunnerError:  # a host no release fits is said first, judged with the torch as installed
        resolved(ctx, os_name=None, cuda=None, torch_python=choice.python)
        raise
    ctx = resolved(ctx, os_name=profile.os if profile else host_os() or "linux",
                   cuda=profile.cuda_major if profile else None)
    source = release_for(ctx, trust_on_first_use=trust_on_first_use, download=download)
    target = profile or assumed_target(argv, source.layout)
    if source.not_downloaded is not None:
        return _planned(ctx, _provisional_plan(target, source, argv, run_env))
    plan = make_plan(target, source.layout, release=source.ref, argv=argv, base_env=run_env)
    plan = dataclasses.replace(plan, warnings=(*plan.warnings, *_assumed(target)))
    if use_cache:
        with contextlib.suppress(OSError):  # a read-only cache only costs speed
            from zluda_runner.host.fs import ROOT_ENV, HostFs, root_from_env
            from zluda_runner.host.libraries import rocm_dirs
            from zluda_runner.loader.hostinfo import LD_SO_CACHE

            host_fs = HostFs(root_from_env(run_env.get(ROOT_ENV) or ""))  # a MIOpen installed there, too
            # where the shims' own dependencies (ROCm) are looked for: the loader's cache the plan read (the
            # host's, or a fake root's), whose change (a new install) plans again
            extra = [*plan.library_path, *(str(host_fs.path(d)) for d in rocm_dirs(run_env, host_fs)),
                     *filter(None, run_env.get("LD_LIBRARY_PATH", "").split(":"))]
            if plan.os != "windows":
                extra.append(str(host_fs.path(LD_SO_CACHE)))
            else:  # where the dependency walk looked for HIP's DLLs
                from zluda_runner.plan.windows_deps import walk_inputs

                extra.extend(walk_inputs(run_env, plan.path_prepend))
            _store_plan(cache_file, plan, _inputs_of(target, source.layout, choice, extra))
    return _planned(ctx, plan)


def _planned(ctx: RunContext, plan: ShimPlan) -> RunContext:
    """``ctx`` with its plan and the target it was made for; the defaults and the host's conflicts are
    never cached: the host's facts are the run's own."""
    plan, facts = _with_host_facts(plan, ctx)
    return dataclasses.replace(ctx, target=plan.target, plan=plan, facts=facts)


def _with_host_facts(plan: ShimPlan, ctx: RunContext) -> tuple[ShimPlan, DefaultsFacts]:
    """What a plan says of the host, from the run's context (never cached): the defaults (and the facts
    they follow), then the HIP SDK conflicts and the GPU x HIP rules the host breaks."""
    from zluda_runner.plan.defaults_facts import gather_facts, with_defaults

    facts = gather_facts(plan, ctx.host, ctx.env, enabled=ctx.settings.defaults, manifest=ctx.manifest)
    plan = with_defaults(plan, ctx.host, ctx.env, enabled=ctx.settings.defaults, manifest=ctx.manifest,
                         facts=facts)
    return _with_rule_warnings(_with_host_conflicts(plan, ctx), ctx), facts


def _with_rule_warnings(plan: ShimPlan, ctx: RunContext) -> ShimPlan:
    """The manifest's GPU x HIP rules the GPU the workload uses (after the plan's own ``HIP_VISIBLE_DEVICES``
    default: :attr:`RunContext.gfx`) breaks with the host's HIP, each a warning in the rule's words, with
    its fix and source (:func:`zluda_runner.release.gpurules.rule_warnings`: what selection and ``doctor``
    say)."""
    found = ctx.host.quick.hip  # no manifest: a --zluda-dir run whose manifest could not be read
    if ctx.gfx is None or found.version is None or not ctx.host.same_os(plan.os) or ctx.manifest is None:
        return plan
    from zluda_runner.release.gpurules import rule_warnings

    found_rules = rule_warnings(ctx.manifest.gpu_hip_rules, ctx.gfx, found.version, plan.os, found.origin)
    new = [w for w in found_rules if w not in plan.warnings]
    return dataclasses.replace(plan, warnings=(*plan.warnings, *new)) if new else plan


def _with_host_conflicts(plan: ShimPlan, ctx: RunContext) -> ShimPlan:
    """A Windows launch's HIP SDK conflicts (several SDKs, a HIP runtime mix between the release's DLLs and
    the SDK's math libraries: :mod:`zluda_runner.host.hipsdk`), each a warning with its fix; read fresh
    each time (never cached), under ``ZLUDA_RUNNER_ROOT`` when that names a fake tree."""
    if plan.os != "windows":
        return plan
    from zluda_runner.host.hipsdk import plan_warnings, release_dlls

    dlls = release_dlls(Path(plan.release.root)) if plan.release is not None else []
    found = plan_warnings(ctx.host.fs.root, ctx.env, dlls, cache_dir=ctx.settings.cache_dir)
    return dataclasses.replace(plan, warnings=(*plan.warnings, *found)) if found else plan


def _provisional_plan(target: TargetProfile, source: ReleaseSource, argv: Sequence[str],
                      env: Mapping[str, str]) -> ShimPlan:
    """A plan from the manifest alone (never cached: the files it describes do not exist yet)."""
    from zluda_runner.plan.build import make_plan
    from zluda_runner.plan.shimdeps import ShimDeps, resolve_shim_deps
    from zluda_runner.plan.shimfacts import provisional_facts

    def deps(shims: Sequence[str]) -> ShimDeps:
        return resolve_shim_deps([s for s in shims if os.path.exists(s)], env)

    plan = make_plan(target, source.layout, release=source.ref, argv=argv, base_env=env,
                     facts_reader=provisional_facts, deps_resolver=deps)
    return dataclasses.replace(plan, provisional=True,
                               warnings=(source.not_downloaded or "", *plan.warnings, *_assumed(target)))


def _assumed(target: TargetProfile) -> list[str]:
    """The target's warnings that say what was assumed about it (it could not be inspected)."""
    from zluda_runner.conduct.resolve import ASSUMED_PREFIX

    return [w for w in target.warnings if w.startswith(ASSUMED_PREFIX)]


def plan_for_torch_lib(torch_lib: Path, settings: Settings, *, argv: Sequence[str] = (),
                       trust_on_first_use: bool = False) -> ShimPlan:
    """The plan for a Windows ``torch/lib`` folder, from any host: its torch folder is inspected (PE
    files, ``version.py``, ``__init__.py``'s DLL loop), the release is ``--zluda-dir`` or the
    manifest's Windows pick for its CUDA major."""
    from zluda_runner.conduct.resolve import release_for, resolved
    from zluda_runner.core.errors import TargetError
    from zluda_runner.inspection.inspect import inspect_path
    from zluda_runner.plan.build import make_plan

    lib = Path(torch_lib)
    if not lib.is_dir():
        raise TargetError(f"{lib} is not a folder",
                          hint="pass {opt:torch_lib} the torch/lib folder of the target")
    profile = inspect_path(lib.parent, cache_dir=settings.cache_dir)
    if profile.os != "windows":
        raise TargetError(f"{lib} holds no Windows DLLs",
                          hint="{opt:torch_lib} is for a Windows torch/lib folder")
    ctx = run_context(argv, settings)
    source = release_for(resolved(ctx, os_name="windows", cuda=profile.cuda_major),
                         trust_on_first_use=trust_on_first_use)
    # the launched process's PATH and System32 (the dependency walk's inputs): this environment's
    plan = make_plan(profile, source.layout, release=source.ref, argv=ctx.argv, base_env=dict(ctx.env))
    from zluda_runner.plan.defaults_facts import with_defaults

    # what place records for runs outside zluda-run
    return with_defaults(plan, ctx.host, ctx.env, enabled=settings.defaults, manifest=ctx.manifest)
