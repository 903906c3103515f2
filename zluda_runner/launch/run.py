"""A workload run, ready to start: the plan carried out into an argv and an environment.

``prepare_run`` does everything ``zluda-run CMD`` does before the workload starts: the command
must exist (exit 127/126 first), the plan is made (or read from the plan cache), a fatal verdict
refuses, and the plan is carried out: the loader set-up on Linux; placement, preload or the
injector on Windows. ``start`` then runs it: when nothing of ours has to run afterwards (no
``--verify-load``, no trace) on a POSIX host, this process *becomes* the workload (``exec``): no
overhead, native signals, and nothing is left running if ``zluda-run`` itself is killed.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from zluda_runner.core.errors import CheckFailedError
from zluda_runner.core.proctree import ended_by
from zluda_runner.core.settings import Settings
from zluda_runner.launch.prepare import check_argv, launch_env, prepare_plan, refuse_if_fatal
from zluda_runner.launch.process import (
    command_words,
    exec_process,
    resolve_command,
    run_process,
    run_process_end,
)
from zluda_runner.plan.model import ShimPlan

if TYPE_CHECKING:
    from zluda_runner.telemetry.model import GpuTrace, NoTelemetry

T = TypeVar("T")

@dataclass
class PreparedRun:
    plan: ShimPlan
    argv: list[str]
    env: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the results store knows for this GPU


def check_host(settings: Settings, *, strict: bool,
               on_warning: Callable[[str], None] | None = None) -> tuple[list[str], str | None]:
    """The doctor's quick checks before anything is downloaded or inspected: warnings (given to
    ``on_warning`` at once, when set), or (``strict``) a refusal; then the release check of the
    host's HIP (no release takes it: exit 3 here); and the GPU target found (gfx)."""
    from zluda_runner.host.quick import quick_facts
    from zluda_runner.launch.prepare import host_release_check

    facts = quick_facts()
    problems = facts.problems
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
    host_release_check(settings, facts.hip)
    return warnings, facts.gfx


def prepare_run(
    argv: Sequence[str],
    settings: Settings,
    *,
    injector: bool = False,
    trust_on_first_use: bool = False,
    strict: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> PreparedRun:
    """Everything before the workload starts (module doc). ``on_warning`` hears the host's warnings
    first, before anything can fail on a release or a plan."""
    args = command_words(argv)  # text words without NUL (a Path, an int written as text)
    check_argv(args)
    resolve_command(args[0], os.environ)  # a command that does not exist: exit 127 before planning
    warnings, gfx = check_host(settings, strict=strict, on_warning=on_warning)
    plan = prepare_plan(args, settings, trust_on_first_use=trust_on_first_use)
    refuse_if_fatal(plan, settings.force)
    from zluda_runner.plan.defaults import switch_off_warning
    from zluda_runner.plan.defaults_facts import visibility_warnings

    switch_off = switch_off_warning(os.environ)  # the plan says it too; a run shows the plan's nothing else
    if switch_off is not None:
        warnings.append(switch_off)
    warnings += visibility_warnings(plan.os, os.environ)  # the user's GPU choice as ROCm reads it
    notes: list[str] = []
    if gfx is not None:
        from zluda_runner.results.recording import known_on_this_gpu

        release_id = plan.refs()[0]
        notes = known_on_this_gpu(settings, gfx, str(release_id["id"]) if release_id else None)
    env = launch_env(plan, settings.cache_dir)
    if plan.os == "windows":
        from zluda_runner.launch.windows import prepare_windows_launch

        launch = prepare_windows_launch(plan, args, settings.cache_dir, injector=injector, base_env=env,
                                        listing=settings.verify_load)
        env.update(launch.env)
        args = list(launch.argv)
        warnings += launch.warnings
        if settings.verify_load:  # the evidence comes from inside the process: see launch.verify_windows
            from zluda_runner.launch.verify_windows import verify_setup

            env.update(verify_setup(plan, hook_written=launch.hook)[0])
    return PreparedRun(plan, args, env, warnings, notes)


def start(run: PreparedRun, *, on_telemetry: Callable[[GpuTrace | NoTelemetry], None] | None = None) -> int:
    """Run the workload to its end and return its exit status; on POSIX, replace this process.

    ``on_telemetry`` (``--monitor``): the workload runs as a child with its GPU sampled meanwhile
    (zluda_runner.telemetry), and hears the trace, or why there is none, once it has exited."""
    if on_telemetry is not None:
        return with_telemetry(lambda: run_child(run.argv, run.env), run.env, on_telemetry)
    if os.name == "posix" and run.plan.os == "linux":
        exec_process(run.argv, run.env)  # returns only by raising
    return run_process(run.argv, run.env)


# the endings a shell does not report for a job it ran: the user's own Ctrl-C, a reader that went away
_UNSAID = {getattr(signal, name) for name in ("SIGINT", "SIGPIPE") if hasattr(signal, name)}


def run_child(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """The workload run as a child to its end (``--monitor``): its exit status (signal N -> 128+N). What
    killed it is said on stderr ("zluda-run: the workload was killed by SIGSEGV (exit 139)"), as a shell
    says it of a job it ran itself: here the shell sees zluda-run exit, not the workload die. The name
    is :func:`zluda_runner.core.proctree.ended_by`'s (a signal on POSIX, a crash code on Windows)."""
    end = run_process_end(argv, env)
    if end.signal in _UNSAID:
        return end.exit_code
    name = ended_by(-end.signal) if end.signal is not None else ended_by(end.exit_code)
    if name and sys.stderr is not None:
        sys.stderr.write(f"zluda-run: the workload was killed by {name} (exit {end.exit_code})\n")
        sys.stderr.flush()
    return end.exit_code


def with_telemetry(work: Callable[[], T], env: Mapping[str, str],
                   on_telemetry: Callable[[GpuTrace | NoTelemetry], None] | None) -> T:
    """``work()`` (a run of the workload to its end: plain, ``--verify-load``'s, ``--trace``'s) with the
    GPU the workload's ``env`` names sampled while it runs (``--monitor``); ``on_telemetry`` hears the
    trace, or why there is none, once it has returned (sampling stopped). Without ``on_telemetry``:
    ``work()`` as it is. The fake host of ``ZLUDA_RUNNER_ROOT`` is what is sampled when that names one."""
    if on_telemetry is None:
        return work()
    from zluda_runner.host.fs import root_from_env
    from zluda_runner.telemetry.watch import monitored

    done: list[T] = []

    def run() -> int:
        done.append(work())
        return 0

    _, trace = monitored(run, env=env, root=root_from_env())
    on_telemetry(trace)
    return done[0]


def plan_argv(command: Sequence[str], settings: Settings, *, check_host: bool = True) -> list[str]:
    """The command a plan is made for: ``plan -- CMD``, else ``--python``, else this interpreter.

    A command that ``run`` could not start (not found: 127, not executable: 126) fails the plan too;
    then (``check_host``) the host's HIP is judged, as ``run`` does, before anything is inspected."""
    argv = [a for a in command_words(command) if a != "--"]
    if argv:
        resolve_command(argv[0], os.environ)
    if check_host:
        from zluda_runner.launch.prepare import host_release_check

        host_release_check(settings)
    return argv or [settings.python or sys.executable]
