"""A run's GPU summary (``--monitor``) recorded with the report of the run it watched (``--verify-load``,
``--trace``: the paths that record a run): one more row, ``gpu``, that counts neither as passing nor as
failing, so the report's own counts and verdict stay what they were."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from zluda_runner.results.recordable import Recordable, ResultRow, ResultRows, number
from zluda_runner.telemetry.model import GpuTrace, NoTelemetry

GPU_ITEM = "gpu"
GpuStatus = Literal["used", "idle", "not sampled", "no telemetry"]


def gpu_row(telemetry: GpuTrace | NoTelemetry) -> ResultRow:
    """The ``gpu`` row: whether the GPU was used while the workload ran, its figures as numbers."""
    if isinstance(telemetry, NoTelemetry):
        return ResultRow(GPU_ITEM, "no telemetry", None, telemetry.reason)
    s = telemetry.summary()
    status: GpuStatus = "not sampled" if s.used_gpu is None else "used" if s.used_gpu else "idle"
    figures = {"duration_s": s.duration_s, "samples": s.samples, "busy_mean": s.busy_mean,
               "busy_peak": s.busy_peak, "vram_peak": s.vram_peak, "vram_total": s.vram_total,
               "vram_delta": s.vram_delta, "power_mean": s.power_mean, "power_peak": s.power_peak,
               "temp_peak": s.temp_peak}
    return ResultRow(GPU_ITEM, status, None, f"{telemetry.device} ({telemetry.backend})",
                     {k: number(v) for k, v in figures.items()})


@dataclass(frozen=True)
class WithGpu:
    """``report`` as it records itself, and the ``gpu`` row of its run
    (:class:`~zluda_runner.results.recordable.Recordable`)."""

    report: Recordable
    telemetry: GpuTrace | NoTelemetry

    def result_rows(self) -> ResultRows:
        own = self.report.result_rows()
        row = gpu_row(self.telemetry)
        return replace(own, rows=(*own.rows, row), summary={**own.summary, "gpu": row.status})
