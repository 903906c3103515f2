"""The one seam every telemetry back end sits behind."""

from __future__ import annotations

from typing import Protocol

from zluda_runner.telemetry.model import GpuReading


class TelemetrySource(Protocol):
    """A GPU that can be read: one sample at a time, from any thread (one reader at a time)."""

    @property
    def backend(self) -> str:
        """"amdgpu-sysfs" | "windows-pdh" | "nvml" | "rocm-smi"."""
        ...

    @property
    def device(self) -> str:
        """Which GPU, in words (and, when the choice was ambiguous, how it was chosen)."""
        ...

    def vram_total(self) -> int | None: ...

    def read(self) -> GpuReading:
        """One reading; a field that cannot be read this time is None (never raises for a bad file)."""
        ...

    def close(self) -> None: ...
