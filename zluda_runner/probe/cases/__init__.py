"""The driver probe's catalogue: small cases by area (see :mod:`.base` for how a case is made); the
cuBLAS beside the driver last (:mod:`.cublas`)."""

from __future__ import annotations

from zluda_runner.probe.cases import (
    context,
    copies,
    cublas,
    device,
    graphs,
    memory,
    modules,
    pools,
    streams,
    textures,
)
from zluda_runner.probe.cases.base import Case, CheckFailed, NotApplicable, Setup

CATALOGUE: tuple[Case, ...] = tuple(
    device.CASES
    + context.CASES
    + memory.CASES
    + copies.CASES
    + pools.CASES
    + streams.CASES
    + modules.CASES
    + graphs.CASES
    + textures.CASES
    + cublas.CASES
)
CASES_BY_ID = {c.id: c for c in CATALOGUE}

__all__ = ["CASES_BY_ID", "CATALOGUE", "Case", "CheckFailed", "NotApplicable", "Setup"]
