"""The whole verdict: prepare the launch, run both sides, judge each criterion, one overall verdict."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.abtest.sides import check_program, split_command
from zluda_runner.core.errors import HostError
from zluda_runner.core.settings import Settings
from zluda_runner.poc import criteria
from zluda_runner.poc.model import Criterion, PocReport, PocRun, Thresholds
from zluda_runner.poc.runner import Progress, Workload, cpu_reference, run_sides
from zluda_runner.telemetry.model import NoTelemetry
from zluda_runner.telemetry.sampler import DEFAULT_INTERVAL_S, open_source

if TYPE_CHECKING:
    from zluda_runner.plan.model import RecordRefs


@dataclass(frozen=True)
class PocRequest:
    command: tuple[str, ...]  # the workload: python script.py ARGS
    runs: int = 3
    reference: str = "cpu"  # "cpu" or a command line
    native: bool = False  # no ZLUDA: the command runs as it is (an NVIDIA or native ROCm baseline)
    thresholds: Thresholds = field(default_factory=Thresholds)
    root: Path | None = None  # a fake system tree for telemetry (tests)
    interval_s: float = DEFAULT_INTERVAL_S
    timeout: float | None = None


def run_poc(
    request: PocRequest,
    settings: Settings,
    *,
    progress: Progress | None = None,
    on_warning: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[PocReport, RecordRefs | None]:
    """Run and judge; raises only for what stops it before anything runs (no release, a fatal plan). With
    the report, what its recording names, from the run's context (None: a native run, no context)."""
    if not request.command:
        raise HostError("nothing to run", hint="{cmd:poc -- python script.py [ARGS]}")
    base_env = dict(os.environ if env is None else env)
    if request.reference == "cpu":
        reference = cpu_reference(request.command, base_env)
    else:  # before the launch is prepared (which may download a release)
        reference_argv = split_command(request.reference, "the reference")
        check_program(reference_argv, "the reference", base_env.get("PATH"))
        reference = Workload("reference", tuple(reference_argv), base_env)
    release: str | None = None
    refs: RecordRefs | None = None
    if request.native:
        workload = Workload("native", request.command, base_env)
    else:
        from zluda_runner.conduct.run import prepare_run

        prepared = prepare_run(list(request.command), settings, on_warning=on_warning)
        for warning in prepared.warnings:
            if on_warning is not None:
                on_warning(warning)
        workload = Workload("zluda", tuple(prepared.argv), prepared.env)
        refs = prepared.recorded
        chosen = prepared.plan.release
        release = (chosen.id or str(chosen.root)) if chosen is not None else None  # a --zluda-dir has no id
    source = open_source(root=request.root, env=workload.env, native=request.native)
    telemetry = source.reason if isinstance(source, NoTelemetry) else f"{source.backend}, {source.device}"
    try:
        runs, reference_runs = run_sides(
            workload, reference, runs=request.runs, source=source, thresholds=request.thresholds,
            interval_s=request.interval_s, timeout=request.timeout, progress=progress,
        )
    finally:
        if not isinstance(source, NoTelemetry):
            source.close()
    return judge(request, runs, reference_runs, telemetry=telemetry,
                 telemetry_available=not isinstance(source, NoTelemetry), release=release), refs


def judge(
    request: PocRequest,
    runs: Sequence[PocRun],
    reference_runs: Sequence[PocRun],
    *,
    telemetry: str,
    telemetry_available: bool,
    release: str | None = None,
) -> PocReport:
    """The report of runs already made (a pure function: the tests judge made-up runs with it)."""
    thresholds = request.thresholds
    min_speedup = thresholds.min_speedup
    if min_speedup is None:
        min_speedup = criteria.CPU_MIN_SPEEDUP if request.reference == "cpu" else criteria.NATIVE_MIN_SPEEDUP
    judged: tuple[Criterion, ...] = (
        criteria.judge_ran(runs),
        criteria.judge_right(runs, reference_runs),
        criteria.judge_gpu(runs, telemetry, telemetry_available),
        criteria.judge_stable(runs, thresholds, telemetry_available),
        criteria.judge_speed(runs, reference_runs, min_speedup),
    )
    failed = [c.name for c in judged if not c.passed]
    summary = (f"it really runs: all {len(judged)} criteria pass" if not failed
               else f"not proven: {', '.join(failed)} failed")
    return PocReport(
        command=tuple(request.command),
        mode="native" if request.native else "zluda",
        reference="cpu" if request.reference == "cpu" else shlex.join(split_command(request.reference)),
        runs=tuple(runs),
        reference_runs=tuple(reference_runs),
        criteria=judged,
        verdict="fail" if failed else "pass",
        summary=summary,
        telemetry=telemetry,
        thresholds=thresholds,
        release=release,
    )
