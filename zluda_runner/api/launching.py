"""Inspect, plan, prepare and run a command: :func:`inspect`, :func:`plan_command`, :func:`prepare_launch`,
:func:`start`, :func:`run`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from zluda_runner.api.options import (
    Options,
    caller_errors,
    command_words,
    to_settings,
    warn_with,
    worded,
)
from zluda_runner.core.argcheck import Seconds, checked

if TYPE_CHECKING:
    from zluda_runner.inspection.profile import TargetProfile
    from zluda_runner.plan.model import RecordRefs, ShimPlan
    from zluda_runner.telemetry.model import GpuTrace, NoTelemetry


@dataclass(frozen=True)
class Launch:
    """What a workload needs to start under ZLUDA, for callers that start the process themselves.

    Start ``argv`` with exactly ``env`` (the full environment, not additions), e.g.
    ``subprocess.run(launch.argv, env=dict(launch.env))``.

    Attributes:
        plan: the plan carried out (its verdicts were not fatal, or ``Options(force=True)``).
        argv: the command to start (on Windows with the injector: the release's ``zluda.exe`` first).
        env: the whole environment to start it with (read-only).
        warnings: what the caller should tell the user (the host's problems, what placement found).
        notes: what the results store knows of this GPU with this release.
    """

    plan: ShimPlan
    argv: tuple[str, ...]
    env: Mapping[str, str]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]
    # what a recording of this launch names (release, torch, host), from the run's own context
    recorded: RecordRefs | None = field(default=None, repr=False, compare=False)


@checked
def inspect(path: Path | str | None = None, options: Options | None = None) -> TargetProfile:
    """What a CUDA build needs, under which names, and where the loader would find each.

    Args:
        path: a torch folder, a site-packages folder, or one ELF/PE binary; default: the torch of
            ``options.python`` (else this interpreter).

    Raises:
        TargetError: nothing inspectable there (no torch, not a CUDA build).
        BinaryFormatError: a file is not a readable ELF/PE file.
    """
    from zluda_runner.inspection.inspect import inspect_path, inspect_python

    settings = to_settings(options)
    with caller_errors():
        if path is not None:
            return inspect_path(Path(path), cache_dir=settings.cache_dir)
        return inspect_python(settings.python or sys.executable, cache_dir=settings.cache_dir)


@checked
def plan_command(
    command: Sequence[str] = (),
    options: Options | None = None,
    *,
    torch_lib: Path | str | None = None,
    use_cache: bool = True,
) -> ShimPlan:
    """What running ``command`` under ZLUDA would do, and whether each library will bind; nothing is
    downloaded (an uncached release is planned from the manifest: ``plan.provisional``).

    This is the plan ``zluda-run plan`` prints: ``plan.bindings`` (one :class:`Binding` per needed
    library, with its ``verdict`` and ``reasons``), ``plan.fatal`` (the bindings that would make the
    launch fail), ``plan.placements`` (Windows DLLs to place).

    Args:
        command: the command to plan for (default: ``options.python``, else this interpreter).
        torch_lib: plan for this Windows ``torch/lib`` folder instead (from any host; the release is
            ``options.zluda_dir`` or the manifest's Windows pick, fetched when needed).
        use_cache: reuse a cached plan whose inputs did not change.

    Raises:
        NothingFitsError: no release fits this host's HIP for the target (judged as ``run`` judges it).
        TargetError, PlanError, LaunchError (the command does not exist: ``CommandNotFoundError``).
    """
    from zluda_runner.conduct.plan import plan_run
    from zluda_runner.conduct.run import plan_context

    settings = to_settings(options)
    with caller_errors():
        ctx = plan_context(command_words(command), settings)
        if torch_lib is not None:
            from zluda_runner.conduct.plan import plan_for_torch_lib

            return plan_for_torch_lib(Path(torch_lib), settings, argv=ctx.argv)
        planned = plan_run(ctx, use_cache=use_cache, download=False).plan
        assert planned is not None  # plan_run plans
        return planned


@checked
def prepare_launch(
    command: Sequence[str],
    options: Options | None = None,
    *,
    strict: bool = False,
    injector: bool = False,
    verify_load: bool = False,
    on_warning: Callable[[str], None] | None = None,
) -> Launch:
    """Everything :func:`run` does before the workload starts, without starting it.

    The release is fetched when needed, the plan made (or read from the plan cache) and refused when
    a verdict is fatal (unless ``Options(force=True)``), and carried out: on Linux the loader set-up
    (a link folder, the redirector) in the cache; on Windows ZLUDA's DLLs are placed into torch/lib
    (journaled: :func:`restore` undoes it) or, with ``injector``, the release's ``zluda.exe`` starts
    the command.

    Args:
        command: the workload's argv (its first word must exist).
        strict: refuse when the host has no AMD GPU driver or HIP runtime (else that is a warning).
        injector: Windows: start the command through the release's ``zluda.exe``.
        verify_load: set up the loader's evidence for :func:`~zluda_runner.api.verify_launch`
            (Windows: the start-up hook lists what was loaded).
        on_warning: hears each of the host's warnings at once, before a release or a plan can fail
            (they are then not in ``launch.warnings``).

    Raises:
        CommandNotFoundError (exit 127), CommandNotExecutableError (126), FatalPlanError (3),
        NothingFitsError (3), CheckFailedError (``strict``: 3), FetchError, PlacementError.
    """
    from zluda_runner.conduct.run import prepare_run

    settings = to_settings(options, verify_load=verify_load)
    with caller_errors():
        prepared = prepare_run(command_words(command), settings, injector=injector, strict=strict,
                               on_warning=warn_with(on_warning))
    return Launch(prepared.plan, tuple(prepared.argv), MappingProxyType(dict(prepared.env)),
                  tuple(worded(w) for w in prepared.warnings), tuple(prepared.notes), prepared.recorded)


@checked
def run(
    command: Sequence[str],
    options: Options | None = None,
    *,
    strict: bool = False,
    injector: bool = False,
    timeout: Seconds | None = None,
    on_telemetry: Callable[[GpuTrace | NoTelemetry], None] | None = None,
) -> int:
    """Run ``command`` under ZLUDA to its end and return its exit status (this process goes on).

    :func:`prepare_launch`, then the workload runs as a child: its output goes where this process's
    goes; Ctrl-C and termination signals are passed on to it. A negative status never comes back: a
    workload killed by signal N returns ``128 + N``, as a shell says.

    Args:
        timeout: seconds after which the workload is killed and LaunchError raised.
        on_telemetry: sample the GPU while the workload runs (utilisation, VRAM, power); hears the
            trace, or why there is none, once it has exited (what ``zluda-run --monitor`` prints).

    Raises:
        what :func:`prepare_launch` raises; LaunchError when the workload cannot be started or ran
        past ``timeout``.
    """
    launch = prepare_launch(command, options, strict=strict, injector=injector)
    return start(launch, timeout=timeout, on_telemetry=on_telemetry)


@checked
def start(
    launch: Launch,
    *,
    replace: bool = False,
    timeout: Seconds | None = None,
    on_telemetry: Callable[[GpuTrace | NoTelemetry], None] | None = None,
) -> int:
    """Start a prepared launch (:func:`prepare_launch`) and return the workload's exit status, as
    :func:`run` does.

    Args:
        replace: a Linux launch on a POSIX host: this process *becomes* the workload (``exec``; this
            call never returns): no overhead, native signals, nothing left running if the caller is
            killed. What ``zluda-run`` does. Elsewhere (or with ``on_telemetry``) it runs as a child.
        timeout: seconds after which the workload (a child) is killed and LaunchError raised.
        on_telemetry: sample the GPU while the workload runs; hears the trace (or why there is
            none) once it has exited (``zluda-run --monitor``).
    """
    from zluda_runner.launch.process import run_process
    from zluda_runner.launch.run import PreparedRun
    from zluda_runner.launch.run import start as start_run

    prepared = PreparedRun(launch.plan, list(launch.argv), dict(launch.env), list(launch.warnings),
                           list(launch.notes), launch.recorded)
    with caller_errors():
        if on_telemetry is not None:
            return start_run(prepared, on_telemetry=on_telemetry)
        if replace and timeout is None:
            return start_run(prepared)
        return run_process(prepared.argv, prepared.env, timeout=timeout)
