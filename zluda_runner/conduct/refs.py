"""The release, the torch and the host a recorded run names, one answer for every kind of run, read off
the run's own context (:func:`context_refs`): ``results matrix`` files each run under the release x torch
it ran with."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

from zluda_runner.conduct.context import RunContext, run_context
from zluda_runner.core.settings import Settings
from zluda_runner.plan.defaults_facts import read_host
from zluda_runner.plan.model import PlanTarget, RecordRefs, ReleaseRef, recorded_refs


def context_refs(ctx: RunContext, *, resolve: bool = True) -> RecordRefs:
    """The plan's release and target where the run was planned (``ctx.plan``); else its target
    (``ctx.target``, else its torch as installed) and ``--zluda-dir``, else the release the run's resolution
    gives (``ctx.resolution``; ``resolve``: else resolved for that torch), else ``--release`` as given. The
    host as the context read it. Never raises."""
    host = ctx.host.recorded()
    if ctx.plan is not None:
        release_ref, target_ref = ctx.plan.refs()
        return RecordRefs(release_ref, target_ref, host)
    target = ctx.target or _installed(ctx)
    settings = ctx.settings
    release = ReleaseRef(settings.release, None, None, None, "") if settings.release else None
    if settings.zluda_dir is not None:
        release = ReleaseRef(None, None, None, None, str(settings.zluda_dir))
    elif ctx.resolution is not None or resolve:  # no plan: the release the resolver gives this torch
        from zluda_runner.conduct.resolve import resolve_run
        from zluda_runner.release.selection import parse_cuda  # a --zluda-dir run never imports releases

        with contextlib.suppress(Exception):
            resolution = ctx.resolution or resolve_run(ctx, cuda=parse_cuda(target.cuda))
            chosen = resolution.require()
            release = ReleaseRef(chosen.release.id, None, None, chosen.asset.name, "")
    named, kept = recorded_refs(release, target, ctx.argv)
    return RecordRefs(named, kept if target != PlanTarget() else None, host)


def _installed(ctx: RunContext) -> PlanTarget:
    """The target as zluda-run chooses it, its torch as installed (nothing known: an empty target)."""
    from zluda_runner.conduct.resolve import choose_target, installed_torch

    with contextlib.suppress(Exception):
        choice = choose_target(ctx.argv, ctx.settings)
        if choice.python is None:
            return PlanTarget(binary=choice.binary)
        python, info = installed_torch(choice.python)
        return PlanTarget(python) if info is None else PlanTarget(python, info.version, info.cuda)
    return PlanTarget()


def run_refs(settings: Settings, argv: Sequence[str] = (), *, planned: bool = True) -> RecordRefs:
    """For a run that carried no context in this process (``ab``'s side A is a ``zluda-run`` child; a
    native run; a command of the user's): the context of ``argv`` (default: the target interpreter) and,
    where the run went through ZLUDA (``planned``), the plan ``zluda-run`` makes for it, from the plan
    cache or made without downloading; then :func:`context_refs`. Never raises."""
    command = tuple(argv) or (settings.python or sys.executable,)
    try:
        ctx = run_context(command, settings)
    except Exception:  # a broken manifest: the host and the target still say what ran
        ctx = RunContext(settings, command, dict(os.environ), read_host(os.environ), None)
    if planned:
        from zluda_runner.conduct.plan import plan_run

        with contextlib.suppress(Exception):  # recording never fails the run it records
            ctx = plan_run(ctx, download=False)
    return context_refs(ctx, resolve=planned)
