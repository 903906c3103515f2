"""What a launch really did: the loader's evidence (:func:`verify_launch`, :func:`verify_plan`) and a
trace of every CUDA driver call (:func:`trace_launch`, :func:`read_trace`, :func:`check_trace_supported`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.api.launching import Launch
from zluda_runner.api.options import Options, caller_errors, keep, to_settings

if TYPE_CHECKING:
    from zluda_runner.launch.verify import VerifyResult
    from zluda_runner.plan.model import ShimPlan
    from zluda_runner.trace.model import TraceReport
    from zluda_runner.trace.workload import TracedRun


def verify_launch(launch: Launch, options: Options | None = None, *,
                  command: Sequence[str] | None = None,
                  on_warning: Callable[[str], None] | None = None) -> VerifyResult:
    """Start a prepared launch (made with ``prepare_launch(..., verify_load=True)``) with the loader
    logging, and report the file the loader really took for every planned binding.

    ``result.command_exit_code()`` is the workload's exit status, or 3 when a binding was not taken.
    Recorded (kind ``verify-load``) unless ``Options(record=False)``; ``command`` is the command line
    recorded (default: the launch's argv); a results-store problem goes to ``on_warning``.
    """
    from zluda_runner.launch.prepare import expected_bindings
    from zluda_runner.launch.verify import verify_bindings

    with caller_errors():
        result = verify_bindings(list(launch.argv), launch.env, expected_bindings(launch.plan))
    release, target = launch.plan.refs()
    keep("verify-load", result, to_settings(options), command or ["--verify-load", *launch.argv],
         on_warning=on_warning, release=release, target=target)
    return result


def verify_plan(plan: ShimPlan, options: Options | None = None, *,
                on_warning: Callable[[str], None] | None = None) -> VerifyResult:
    """Run ``python -c "import torch"`` under ``plan`` (Linux) and report the file the loader took for
    every planned binding (``result.failed``: one was not). Recorded unless ``Options(record=False)``.

    Raises:
        LaunchError: a Windows plan (the proof needs the DLLs placed: :func:`verify_launch`).
    """
    from zluda_runner.launch.verify import verify_torch_import

    settings = to_settings(options)
    with caller_errors():
        result = verify_torch_import(plan, settings.cache_dir)
    release, target = plan.refs()
    keep("verify-load", result, settings, ["plan", "--verify-load"], on_warning=on_warning,
         release=release, target=target)
    return result


def check_trace_supported() -> None:
    """Refuse at once where a trace cannot be taken (on Windows), before anything is planned or fetched.

    Raises:
        TraceError: not on this host.
    """
    from zluda_runner.trace.workload import check_supported

    with caller_errors():
        check_supported()


def trace_launch(launch: Launch, options: Options | None = None, *, out: Path | str | None = None,
                 on_warning: Callable[[str], None] | None = None) -> TracedRun:
    """Run a prepared Linux launch with every CUDA driver call traced (ZLUDA's tracer between the
    workload and ZLUDA's driver); the report is saved to ``out`` (default: the cache's ``traces/``).

    ``traced.report`` is the trace, ``traced.saved_to`` where it is, ``traced.exit_code`` the workload's
    (124: it did not finish). Recorded (kind ``trace``) unless ``Options(record=False)``.

    Raises:
        TraceError: a Windows plan, no driver to forward to, or the report could not be written.
    """
    from zluda_runner.trace.workload import trace_workload

    settings = to_settings(options, trace_out=None if out is None else Path(out))
    with caller_errors():
        traced = trace_workload(launch.plan, list(launch.argv), settings)
    release, target = launch.plan.refs()
    keep("trace", traced.report, settings, ["--trace", *launch.argv], on_warning=on_warning,
         release=release, target=target)
    return traced


def read_trace(path: Path | str) -> TraceReport:
    """A saved trace: the JSON report a traced run wrote, or a folder of the tracer's raw files.

    Raises:
        TraceError: not a trace, or too large.
    """
    from zluda_runner.trace.run import load_trace

    with caller_errors():
        return load_trace(Path(path))
