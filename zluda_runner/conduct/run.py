"""The conductor: what ``zluda-run CMD`` does before the workload starts (:func:`prepare_run`: the command
exists, the host and its release are judged, the plan made or read from its cache and carried out), and
the same path for ``plan`` (:func:`plan_context`); both on one run context
(:mod:`zluda_runner.conduct.context`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from zluda_runner.conduct.context import RunContext, context_env, run_context
from zluda_runner.conduct.plan import plan_run
from zluda_runner.conduct.refs import context_refs
from zluda_runner.core.errors import CheckFailedError, LaunchError, UsageFault
from zluda_runner.core.settings import Settings
from zluda_runner.launch.prepare import launch_env, refuse_if_fatal
from zluda_runner.launch.process import command_words, resolve_command
from zluda_runner.launch.run import PreparedRun
from zluda_runner.plan.defaults_facts import HostRead, read_host


def host_warnings(host: HostRead, *, strict: bool,
                  on_warning: Callable[[str], None] | None = None) -> list[str]:
    """The doctor's quick checks before anything is downloaded or inspected: warnings (given to
    ``on_warning`` at once, when set), or (``strict``) a refusal."""
    problems = host.quick.problems
    if problems and strict:
        raise CheckFailedError(
            "this host cannot run the workload on an AMD GPU: " + "; ".join(problems),
            hint="{cmd:doctor} says what to install; without {opt:strict} zluda-run goes on "
            "(torch then sees no GPU)",
        )
    warnings = (["; ".join(problems) + ": torch will see no GPU (`zluda-run doctor` says what to fix)"]
                if problems else [])
    if on_warning is not None:
        for warning in warnings:
            on_warning(warning)
        warnings = []
    return warnings


def prepare_run(
    argv: Sequence[str],
    settings: Settings,
    *,
    injector: bool = False,
    trust_on_first_use: bool = False,
    strict: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> PreparedRun:
    """Everything before the workload starts (module doc), on the run's one context (:func:`run_context`).
    ``on_warning`` hears the host's warnings first, before anything can fail on a release or a plan; then
    the release is resolved once its target is known, and the host judged by it (none fits: exit 3)."""
    args = command_words(argv)  # text words without NUL (a Path, an int written as text)
    if not args:
        raise LaunchError("no command to run", hint="{usage}")
    if injector:  # said before anything is read, fetched or started (the release stack only then)
        from zluda_runner.release.selection import host_os

        if host_os() != "windows":
            raise UsageFault(f"{{opt:injector}} is for Windows only (this host: {host_os() or sys.platform}):"
                             " it starts the workload through the release's zluda.exe",
                             hint="leave it out: on Linux the loader set-up (LD_LIBRARY_PATH, LD_AUDIT) "
                                  "needs no injector")
    resolve_command(args[0], os.environ)  # a command that does not exist: exit 127 before planning
    lock = None
    if settings.lock is not None:  # the lock's release, nothing chosen again
        from zluda_runner.conduct.lock import locked_settings
        from zluda_runner.release.lockfile import INJECTOR_VARIANT, read_lock

        lock = read_lock(settings.lock)
        settings = locked_settings(settings, lock, os.environ)
        injector = injector or lock.variant == INJECTOR_VARIANT  # started as find proved it
    run_env = context_env(settings)  # the one environment of this run (a chosen HIP applied)
    host = read_host(run_env)
    warnings = host_warnings(host, strict=strict, on_warning=on_warning)
    ctx = run_context(args, settings, run_env, host=host)
    ctx = plan_run(ctx, trust_on_first_use=trust_on_first_use)
    plan = ctx.plan
    assert plan is not None  # plan_run plans
    if lock is not None:
        from zluda_runner.conduct.lock import check_locked_plan

        warnings += check_locked_plan(lock, plan, host.quick, source=str(settings.lock), strict=strict)
    refuse_if_fatal(plan, settings.force)
    from zluda_runner.plan.defaults import switch_off_warning
    from zluda_runner.plan.defaults_facts import visibility_warnings
    from zluda_runner.plan.unbound import unbound_notes

    switch_off = switch_off_warning(ctx.env)  # the plan says it too; a run shows the plan's nothing else
    if switch_off is not None:
        warnings.append(switch_off)
    warnings += visibility_warnings(plan.os, host, ctx.env)  # the user's GPU choice as ROCm reads it
    warnings += unbound_notes(plan.bindings)  # a stand-in left out (its ROCm library missing), and the fix
    notes: list[str] = []
    if host.quick.gfx is not None:
        from zluda_runner.results.recording import known_on_this_gpu

        release_id = plan.refs()[0]
        notes = known_on_this_gpu(settings, host.quick.gfx, str(release_id["id"]) if release_id else None)
    env = launch_env(plan, settings.cache_dir, ctx.env)
    if lock is not None:
        env.update(lock.env)  # the variant the lock was proven with (the start-up defaults' list)
    if plan.os == "windows":
        from zluda_runner.launch.windows import prepare_windows_launch

        launch = prepare_windows_launch(plan, args, settings.cache_dir, injector=injector, base_env=env,
                                        listing=settings.verify_load)
        env.update(launch.env)
        args = list(launch.argv)
        warnings += launch.warnings
        if settings.verify_load:  # the evidence comes from inside the process: see launch.windows.verify
            from zluda_runner.launch.windows.verify import verify_setup

            env.update(verify_setup(plan, hook_written=launch.hook)[0])
    return PreparedRun(plan, args, env, warnings, notes, recorded=context_refs(ctx), facts=ctx.facts,
                       host=ctx.host)


def plan_context(command: Sequence[str], settings: Settings) -> RunContext:
    """The context of the run a plan is made for: ``plan -- CMD``, else ``--python``, else this interpreter.

    A command that ``run`` could not start (not found: 127, not executable: 126) fails the plan too; the
    host's HIP is judged, as ``run`` does, by the release resolved for the target (``plan_run``)."""
    argv = [a for a in command_words(command) if a != "--"]
    if argv:
        resolve_command(argv[0], os.environ)
    return run_context(argv or [settings.python or sys.executable], settings)
