"""Workloads run for what they tell: :func:`warmup` (fill ZLUDA's compile cache) and :func:`run_ab`
(the same script under ZLUDA and natively, outputs and timings compared)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from zluda_runner.api.launching import prepare_launch
from zluda_runner.api.options import Options, caller_errors, command_words, keep, to_settings, warn_with
from zluda_runner.api.options import recorded as recorded_call
from zluda_runner.core.argcheck import NotNegative, Runs, Seconds, checked

if TYPE_CHECKING:
    from zluda_runner.abtest.model import AbReport
    from zluda_runner.launch.warmup import WarmupReport


@checked
def warmup(
    command: Sequence[str],
    options: Options | None = None,
    *,
    heartbeat: Seconds = 10.0,
    as_is: bool = False,
    output_to_stderr: bool = False,
    on_heartbeat: Callable[[float, int, int], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    precompile: bool = True,
    clear_caches: bool = False,
) -> WarmupReport:
    """Run ``command`` once under ZLUDA to fill its compile cache (a first run compiles for minutes),
    measuring the time it took and how much the cache grew; ``report.exit_code`` is the command's.

    The release is fetched and the plan made first (as :func:`prepare_launch`: its errors are raised).

    Args:
        heartbeat: seconds between calls of ``on_heartbeat(elapsed_s, cache_bytes, grown_bytes)``.
        as_is: run ``command`` unchanged (it already runs under ZLUDA): nothing is planned.
        output_to_stderr: send the command's standard output to this process's stderr (keep stdout
            for a report).
        on_warning: hears the host's and the launch's warnings.
        precompile: where the release ships its own ``zluda_precompile`` (upstream v6 and later), run
            that on the target's CUDA binaries instead of ``command`` (``command`` runs when it fails);
            ``report.method`` says which ran.
        clear_caches: first remove ZLUDA's compile cache and MIOpen's user caches (stale after a
            driver or release change), each file listed in ``report.cleared``.

    Raises:
        what :func:`prepare_launch` raises; HostError: no command, or ``heartbeat`` not positive.
    """
    from zluda_runner.launch import warmup as warmups

    argv, env = command_words(command), dict(os.environ)
    plan = None
    if not as_is:
        hear = warn_with(on_warning)
        launch = prepare_launch(command, options, on_warning=on_warning)
        argv, env, plan = list(launch.argv), dict(launch.env), launch.plan
        for warning in launch.warnings:
            if hear is not None:
                hear(warning)
    with caller_errors():
        return warmups.warmup(argv, env, heartbeat_s=heartbeat, on_heartbeat=on_heartbeat,
                              stdout=warmups.stderr_fd() if output_to_stderr else None,
                              plan=plan, precompile=precompile, clear=clear_caches)


@checked
@recorded_call
def run_ab(
    script: Sequence[str] = (),
    options: Options | None = None,
    *,
    runs: Runs = 3,
    b_python: str | None = None,
    a_command: str | None = None,
    b_command: str | None = None,
    timeout: Seconds | None = None,
    rtol: NotNegative | None = None,
    atol: NotNegative | None = None,
    progress: Callable[[str], None] | None = None,
    command: Sequence[str] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> AbReport:
    """Run ``script`` under ZLUDA (side A) and natively (side B), alternating A, B, A, B ``runs`` times
    each, and compare what it recorded (``from zluda_runner import ab``: outputs and timings).

    Side A is ``a_command`` + the script's arguments, else the script under ZLUDA in ``options.python``;
    side B ``b_command`` + the arguments, else ``b_python`` (a native ROCm torch) running the script.
    ``report.exit_code`` is 0 when both sides ran and agree, else 3. A failing side is a verdict, never
    an exception. Recorded (kind ``ab``) unless ``Options(record=False)``.

    Args:
        script: the script and its arguments (``["bench.py", "--steps", "10"]``).
        a_command, b_command: a side's command as one string (split as a shell would; never run by one).
        timeout: seconds after which a run is stopped.
        rtol, atol: the tolerances (default: by dtype).
        progress: hears one line per run.
        command: the command line recorded (default: this call and its arguments).
        on_warning: hears a results-store problem.

    Raises:
        HostError: nothing to run on a side, a side's interpreter does not exist; ArgumentValueError: a
        number out of its range.
    """
    from zluda_runner.abtest.run import run_ab as run_sides
    from zluda_runner.abtest.sides import ab_sides

    settings = to_settings(options)
    with caller_errors():
        a_argv, b_argv = ab_sides(script, a_cmd=a_command, b_cmd=b_command, b_python=b_python,
                                  settings=settings)
        report = run_sides(a_argv, b_argv, runs=runs, timeout=timeout, rtol=rtol, atol=atol,
                           progress=progress)
    keep("ab", report, settings, command, on_warning=on_warning, argv=a_argv if a_command else (),
         planned=not a_command)  # side A: the script under ZLUDA, else a command of the user's
    return report
