"""The numbers ``ab`` and ``poc`` are given, checked before anything runs.

NaN passes every ``<`` and ``<=`` test unnoticed (click's ranges too): a NaN timeout never fires, a
NaN interval spins the sampler, a NaN tolerance fails every comparison and puts a bare ``NaN`` into
the JSON report, which strict JSON readers (``jq``) refuse.  ``--runs`` is bounded: every run's
record (its output tails, its GPU trace) stays in memory until the report is made.
"""

from __future__ import annotations

import math

from zluda_runner.core.errors import HostError

MAX_RUNS = 1000


def check_runs(runs: int) -> None:
    if not 1 <= runs <= MAX_RUNS:
        raise HostError(f"{{opt:runs}} must be 1 to {MAX_RUNS} (got {runs})",
                        hint="use {opt:runs 3}: the first run compiles, the others show stability")


def check_timeout(timeout: float | None) -> None:
    """None or ``inf``: no limit; else positive seconds."""
    if timeout is not None and not timeout > 0:  # NaN too
        raise HostError(f"{{opt:timeout}} must be positive seconds (got {timeout:g})",
                        hint="give seconds: {opt:timeout 600}")


def check_tolerances(rtol: float | None, atol: float | None) -> None:
    for value, option in ((rtol, "relative"), (atol, "absolute")):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise HostError(f"the {option} tolerance must be a number >= 0 (got {value:g})",
                            hint="leave it out for the defaults by dtype, or give e.g. 1e-3")
