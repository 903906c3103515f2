"""The release and the torch a recorded run names, one answer for every kind of run (:func:`run_refs`):
``results matrix`` files each run under the release x torch it ran with."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence

from zluda_runner.conduct.context import RunContext, run_context
from zluda_runner.conduct.resolve import choose_target, installed_torch, resolve_run
from zluda_runner.core.settings import Settings
from zluda_runner.plan.model import PlanTarget, ReleaseRef, ShimPlan, recorded_refs
from zluda_runner.release.selection import parse_cuda


def run_refs(settings: Settings, argv: Sequence[str] = (), *, plan: ShimPlan | None = None,
             planned: bool = True) -> tuple[dict[str, object] | None, dict[str, object] | None]:
    """``plan``'s release and target (the plan the run carried out); else (``planned``: the run went
    through ZLUDA) those of the plan ``zluda-run`` makes for ``argv`` (default: the target interpreter),
    from the plan cache or made without downloading. A run without a plan (native, a driver given by
    path, a command of the user's), or where none can be made, names the target's torch as installed and
    ``--zluda-dir``, else (``planned``) the resolver's pick for that torch on the same run context, else
    ``--release`` as given. Never raises."""
    command = list(argv) or [settings.python or sys.executable]
    ctx: RunContext | None = None
    if plan is None and planned:
        from zluda_runner.conduct.plan import prepare_plan

        with contextlib.suppress(Exception):  # recording never fails the run it records
            ctx = run_context(command, settings)
            plan = prepare_plan(ctx, download=False)
    if plan is not None:
        return plan.refs()
    target = PlanTarget()
    with contextlib.suppress(Exception):  # the target as zluda-run chooses it, its torch as installed
        choice = choose_target(command, settings)
        target = PlanTarget(binary=choice.binary)
        if choice.python is not None:
            python, info = installed_torch(choice.python)
            target = PlanTarget(python) if info is None else PlanTarget(python, info.version, info.cuda)
    release = ReleaseRef(settings.release, None, None, None, "") if settings.release else None
    if settings.zluda_dir is not None:
        release = ReleaseRef(None, None, None, None, str(settings.zluda_dir))
    elif ctx is not None:  # no plan (a CPU torch, an uninspectable target): the release the resolver gives it
        with contextlib.suppress(Exception):
            chosen = resolve_run(ctx, cuda=parse_cuda(target.cuda)).require()
            release = ReleaseRef(chosen.release.id, None, None, chosen.asset.name, "")
    named, kept = recorded_refs(release, target, command)
    return named, kept if target != PlanTarget() else None
