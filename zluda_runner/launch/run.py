"""A workload run, ready to start: the plan carried out into an argv and an environment
(:func:`zluda_runner.conduct.run.prepare_run` makes it). ``start`` runs it: when nothing of ours
has to run afterwards (no ``--verify-load``, no trace) on a POSIX host, this process *becomes* the
workload (``exec``): no overhead, native signals, and nothing is left running if ``zluda-run``
itself is killed.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from zluda_runner.launch.process import exec_process, run_process, run_process_end

if TYPE_CHECKING:
    from zluda_runner.plan.defaults import DefaultsFacts
    from zluda_runner.plan.defaults_facts import HostRead
    from zluda_runner.plan.model import RecordRefs, ShimPlan
    from zluda_runner.telemetry.model import GpuTrace, NoTelemetry

T = TypeVar("T")

@dataclass
class PreparedRun:
    plan: ShimPlan
    argv: list[str]
    env: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the results store knows for this GPU
    recorded: RecordRefs | None = None  # what a recording of this run names, from the run's context
    facts: DefaultsFacts | None = None  # what the plan's defaults followed (find's variants read them)
    host: HostRead | None = None  # the host as the run read it (its HIP chosen, if one was)


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
    from zluda_runner.core.proctree import ended_by

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
