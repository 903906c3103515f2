"""Running the workload for the verdict: N runs through ZLUDA (or natively) with GPU telemetry, each
in its own ``ab.record`` folder, then the reference; what each run recorded is read back and compared.

The reference ``cpu`` is the same command without ZLUDA and with ``CUDA_VISIBLE_DEVICES=""``: a CUDA
build of torch then sees no device (on an AMD host there is no NVIDIA driver anyway; the variable
hides an NVIDIA GPU in ``--native`` runs), and a script that picks its device by
``torch.cuda.is_available()`` runs on the CPU.  Any other reference is a command line of its own
(a native ROCm python and the script), split like a shell would, never run by one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

from zluda_runner.abtest.compare import compare_outputs
from zluda_runner.abtest.model import Output
from zluda_runner.abtest.run import record_space, run_recorded
from zluda_runner.poc.model import PocRun, Side, Thresholds, Timing
from zluda_runner.probe.output_compare import tolerance
from zluda_runner.telemetry.model import NoTelemetry
from zluda_runner.telemetry.sampler import DEFAULT_INTERVAL_S, Sampling, TelemetrySource

CPU_REFERENCE_ENV = {"CUDA_VISIBLE_DEVICES": ""}
# float16/bfloat16 outputs of a network carry errors that grow with the size of its values, not per
# element: their absolute tolerance is at least this part of the reference's largest magnitude
SCALE_ATOL = 1e-2
_REDUCED = ("float16", "bfloat16")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Workload:
    """One side's command and environment."""

    side: Side
    argv: tuple[str, ...]
    env: Mapping[str, str]


@dataclass(frozen=True)
class Recorded:
    """A run and what it recorded (the outputs stay here, out of the report)."""

    run: PocRun
    outputs: Mapping[str, Output]


def cpu_reference(command: Sequence[str], env: Mapping[str, str]) -> Workload:
    return Workload("reference", tuple(command), {**env, **CPU_REFERENCE_ENV})


def run_sides(
    workload: Workload,
    reference: Workload,
    *,
    runs: int,
    source: TelemetrySource | NoTelemetry,
    thresholds: Thresholds,
    interval_s: float = DEFAULT_INTERVAL_S,
    timeout: float | None = None,
    work_dir: Path | None = None,
    progress: Progress | None = None,
) -> tuple[tuple[PocRun, ...], tuple[PocRun, ...]]:
    """The reference once, then the workload ``runs`` times, each sampled; compared to the reference."""
    with record_space("zluda-poc-", work_dir) as (tmp, import_dir):
        ref = _run_once(reference, 1, tmp / "reference-1", import_dir, None, interval_s, timeout)
        _say(progress, ref.run, 1)
        ours: list[PocRun] = []
        for i in range(1, runs + 1):
            sampled = None if isinstance(source, NoTelemetry) else source
            got = _run_once(workload, i, tmp / f"run-{i}", import_dir, sampled, interval_s, timeout)
            compared = compare_outputs(got.outputs, ref.outputs, thresholds.rtol,
                                       lambda a, b: _atol(a, b, thresholds)) if got.outputs else ()
            run = replace(got.run, comparisons=compared)
            ours.append(run)
            _say(progress, run, runs)
    return tuple(ours), (ref.run,)


def _say(progress: Progress | None, run: PocRun, of: int) -> None:
    if progress is None:
        return
    state = "ok" if run.ok else f"FAILED ({run.error or f'exit {run.exit_code}'})"
    first = " (first run: compiles)" if run.index == 1 and run.side != "reference" and of > 1 else ""
    label = "reference" if run.side == "reference" else f"run {run.index}/{of}{first}"
    progress(f"{label}: {run.wall_s:.2f} s, {state}")


def _run_once(
    workload: Workload,
    index: int,
    out_dir: Path,
    import_dir: Path,
    source: TelemetrySource | None,
    interval_s: float,
    timeout: float | None,
) -> Recorded:
    sampling: AbstractContextManager[Sampling | None] = (
        Sampling(source, interval_s) if source is not None else nullcontext()
    )
    with sampling as sampler:
        done = run_recorded(workload.argv, workload.env, out_dir, import_dir, timeout=timeout)
    trace = sampler.result() if sampler is not None else None
    tokens = done.outputs.get("tokens")
    run = PocRun(
        side=workload.side,
        index=index,
        argv=done.argv,
        exit_code=done.exit_code,
        wall_s=done.wall_s,
        error=done.error,
        stderr_tail=done.stderr_tail,
        stdout_tail=done.stdout_tail,
        outputs=tuple(done.outputs),
        tokens=len(tokens.values) if tokens is not None else None,
        timings=tuple(Timing(name, seconds) for name, seconds in done.timings.items()),
        trace=trace,
        gpu=trace.summary() if trace is not None else None,
    )
    return Recorded(run, done.outputs)


def _atol(a: Output, b: Output, thresholds: Thresholds) -> float | None:
    if thresholds.atol is not None:
        return thresholds.atol
    if a.dtype not in _REDUCED and b.dtype not in _REDUCED:
        return None  # the comparator's own, by dtype
    finite = [abs(v) for v in b.values if math.isfinite(v)]
    base = max(tolerance(a.dtype)[1], tolerance(b.dtype)[1])
    return max(base, SCALE_ATOL * max(finite, default=0.0))
