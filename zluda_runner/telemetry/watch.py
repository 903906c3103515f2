"""Run a workload with the GPU sampled around it: the one call ``--monitor`` (and ``poc``) make."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from zluda_runner.telemetry.model import GpuTrace, NoTelemetry
from zluda_runner.telemetry.sampler import DEFAULT_INTERVAL_S, Sampling, open_source


def monitored(
    run: Callable[[], int],
    *,
    env: Mapping[str, str],
    root: Path | None = None,
    native: bool = False,
    interval_s: float = DEFAULT_INTERVAL_S,
) -> tuple[int, GpuTrace | NoTelemetry]:
    """``run()`` (the workload, to its end) with the GPU of ``env`` (the workload's environment)
    sampled while it runs: its exit status, and the trace or why there is none.  Sampling has
    stopped (its thread joined) and the source is closed when this returns, whatever ``run`` did."""
    source = open_source(root=root, env=env, native=native)
    if isinstance(source, NoTelemetry):
        return run(), source
    try:
        with Sampling(source, interval_s) as sampling:
            code = run()
        return code, sampling.result()
    finally:
        source.close()
