"""What a launch really did: the loader's evidence (:func:`verify_launch`, :func:`verify_plan`) and a
trace of every CUDA driver call (:func:`trace_launch`, :func:`read_trace`, :func:`check_trace_supported`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from zluda_runner.api.launching import Launch
from zluda_runner.api.options import Options, caller_errors, keep, recorded, to_settings
from zluda_runner.core.argcheck import checked

if TYPE_CHECKING:
    from zluda_runner.launch.verdict import VerifyResult
    from zluda_runner.plan.model import ShimPlan
    from zluda_runner.results.recordable import Recordable
    from zluda_runner.telemetry.model import GpuTrace, NoTelemetry
    from zluda_runner.trace.model import TraceReport
    from zluda_runner.trace.workload import TracedRun

T = TypeVar("T")


Telemetry = Callable[["GpuTrace | NoTelemetry"], None]


@checked
@recorded
def verify_launch(launch: Launch, options: Options | None = None, *,
                  command: Sequence[str] | None = None,
                  on_warning: Callable[[str], None] | None = None,
                  on_telemetry: Telemetry | None = None) -> VerifyResult:
    """Start a prepared launch (made with ``prepare_launch(..., verify_load=True)``) with the loader
    logging, and report the file the loader really took for every planned binding.

    ``result.command_exit_code()`` is the workload's exit status, or 3 when a binding was not taken.
    Recorded (kind ``verify-load``) unless ``Options(record=False)``; ``command`` is the command line
    recorded (default: this call and its arguments); a results-store problem goes to ``on_warning``.
    ``on_telemetry``: the GPU is sampled while the workload runs, as :func:`start` does; the trace (or
    why there is none) is heard once it has exited, and its summary recorded with the evidence.
    """
    from zluda_runner.launch.prepare import expected_bindings
    from zluda_runner.launch.verify import verify_bindings

    def verify() -> VerifyResult:
        return verify_bindings(list(launch.argv), launch.env, expected_bindings(launch.plan))

    with caller_errors():
        result, gpu = _watched(verify, launch, on_telemetry)
    keep("verify-load", _with_gpu(result, gpu), to_settings(options), command, on_warning=on_warning,
         refs=launch.recorded, plan=launch.plan)
    _tell(on_telemetry, gpu)
    return result


@checked
@recorded
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
    keep("verify-load", result, settings, on_warning=on_warning, plan=plan)
    return result


@checked
def check_trace_supported() -> None:
    """Refuse at once where a trace cannot be taken (on Windows), before anything is planned or fetched.

    Raises:
        TraceError: not on this host.
    """
    from zluda_runner.trace.workload import check_supported

    with caller_errors():
        check_supported()


@checked
@recorded
def trace_launch(launch: Launch, options: Options | None = None, *, out: Path | str | None = None,
                 on_warning: Callable[[str], None] | None = None,
                 on_telemetry: Telemetry | None = None) -> TracedRun:
    """Run a prepared Linux launch with every CUDA driver call traced (ZLUDA's tracer between the
    workload and ZLUDA's driver); the report is saved to ``out`` (default: the cache's ``traces/``).

    ``traced.report`` is the trace, ``traced.saved_to`` where it is, ``traced.exit_code`` the workload's
    (124: it did not finish). Recorded (kind ``trace``) unless ``Options(record=False)``.
    ``on_telemetry``: the GPU is sampled while the workload runs (:func:`verify_launch` says how).

    Raises:
        TraceError: a Windows plan, no driver to forward to, or the report could not be written.
    """
    from zluda_runner.trace.workload import trace_workload


    settings = to_settings(options, trace_out=None if out is None else Path(out))
    with caller_errors():
        traced, gpu = _watched(lambda: trace_workload(launch.plan, list(launch.argv), settings), launch,
                               on_telemetry)
    keep("trace", _with_gpu(traced.report, gpu), settings, on_warning=on_warning, refs=launch.recorded,
         plan=launch.plan)
    _tell(on_telemetry, gpu)
    return traced


def _watched(work: Callable[[], T], launch: Launch,
             on_telemetry: Telemetry | None) -> tuple[T, GpuTrace | NoTelemetry | None]:
    """``work()``, with the GPU of the launch's environment sampled meanwhile when ``on_telemetry``."""
    from zluda_runner.launch.run import with_telemetry

    heard: list[GpuTrace | NoTelemetry] = []
    done = with_telemetry(work, launch.env, heard.append if on_telemetry is not None else None)
    return done, (heard[0] if heard else None)


def _with_gpu(report: Recordable, gpu: GpuTrace | NoTelemetry | None) -> Recordable:
    from zluda_runner.launch.gpu_record import WithGpu

    return report if gpu is None else WithGpu(report, gpu)


def _tell(on_telemetry: Telemetry | None, gpu: GpuTrace | NoTelemetry | None) -> None:
    if on_telemetry is not None and gpu is not None:
        on_telemetry(gpu)


@checked
def read_trace(path: Path | str) -> TraceReport:
    """A saved trace: the JSON report a traced run wrote, or a folder of the tracer's raw files.

    Raises:
        TraceError: not a trace, or too large.
    """
    from zluda_runner.trace.run import load_trace

    with caller_errors():
        return load_trace(Path(path))
