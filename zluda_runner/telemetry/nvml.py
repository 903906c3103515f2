"""NVML (NVIDIA), for ``--native`` runs: only when ``pynvml`` (nvidia-ml-py, the ``nvml`` extra) imports."""

from __future__ import annotations

from collections.abc import Mapping

from zluda_runner.telemetry.model import NoTelemetry


def open_nvml(env: Mapping[str, str]) -> NoTelemetry:
    return NoTelemetry("NVML telemetry is not built yet")
