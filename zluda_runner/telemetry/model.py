"""The records telemetry hands on: samples, the trace of one run, and its summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zluda_runner.core.serial import JsonMixin

Backend = Literal["amdgpu-sysfs", "windows-pdh", "nvml", "rocm-smi"]

# Below these the GPU counts as idle for the whole run: a desktop compositor alone keeps an
# amdgpu card at a few percent busy, and a run that allocates VRAM has used the device.
IDLE_BUSY_PERCENT = 10.0
IDLE_VRAM_GROWTH = 128 * 1024 * 1024


@dataclass(frozen=True)
class GpuReading(JsonMixin):
    """One reading of a telemetry source; a field a back end cannot read is None."""

    busy_percent: float | None = None
    vram_used: int | None = None  # bytes
    power_w: float | None = None
    temp_c: float | None = None


@dataclass(frozen=True)
class GpuSample(JsonMixin):
    t: float  # seconds since sampling started (monotonic)
    busy_percent: float | None
    vram_used: int | None  # bytes
    power_w: float | None
    temp_c: float | None

    @classmethod
    def at(cls, t: float, reading: GpuReading) -> GpuSample:
        return cls(t, reading.busy_percent, reading.vram_used, reading.power_w, reading.temp_c)


@dataclass(frozen=True)
class GpuSummary(JsonMixin):
    duration_s: float
    samples: int
    busy_mean: float | None
    busy_peak: float | None
    vram_peak: int | None
    vram_total: int | None
    vram_delta: int | None  # after - before
    power_mean: float | None
    power_peak: float | None
    temp_peak: float | None
    used_gpu: bool | None  # None: no telemetry; False: stayed idle the whole run


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class GpuTrace(JsonMixin):
    device: str  # which GPU, in words
    backend: str  # "amdgpu-sysfs" | "windows-pdh" | "nvml" | "rocm-smi"
    interval_s: float  # the rate sampling ended at (doubled each time samples were thinned)
    vram_total: int | None
    vram_before: int | None  # before the workload started
    vram_after: int | None  # after it exited
    samples: tuple[GpuSample, ...]
    dropped: int = 0  # samples thinned to stay within the bound
    duration_s: float | None = None  # from the start of sampling to its stop (None: the last sample's t)

    def while_running(self) -> tuple[GpuSample, ...]:
        """The samples taken while the workload ran: all but the first (``t == 0``), which is the
        baseline read as it started."""
        return tuple(s for s in self.samples if s.t > 0)

    def summary(self) -> GpuSummary:
        """Means and peaks over the samples taken while the workload ran (none: a run shorter than
        one interval; then every figure but the VRAM delta is None, and so is ``used_gpu``)."""
        running = self.while_running()
        busy = [s.busy_percent for s in running if s.busy_percent is not None]
        vram = [s.vram_used for s in running if s.vram_used is not None]
        power = [s.power_w for s in running if s.power_w is not None]
        temp = [s.temp_c for s in running if s.temp_c is not None]
        duration = self.duration_s if self.duration_s is not None else (
            self.samples[-1].t if self.samples else 0.0
        )
        delta = (
            self.vram_after - self.vram_before
            if self.vram_after is not None and self.vram_before is not None
            else None
        )
        return GpuSummary(
            duration_s=duration,
            samples=len(running),
            busy_mean=_mean(busy),
            busy_peak=max(busy) if busy else None,
            vram_peak=max(vram) if vram else None,
            vram_total=self.vram_total,
            vram_delta=delta,
            power_mean=_mean(power),
            power_peak=max(power) if power else None,
            temp_peak=max(temp) if temp else None,
            used_gpu=self._used_gpu(busy, vram),
        )

    def _used_gpu(self, busy: list[float], vram: list[int]) -> bool | None:
        """True when the GPU was busy or VRAM grew while the workload ran; None when neither was read."""
        if not busy and not vram:
            return None
        if busy and max(busy) >= IDLE_BUSY_PERCENT:
            return True
        before = self.vram_before
        return bool(vram) and before is not None and max(vram) - before >= IDLE_VRAM_GROWTH


@dataclass(frozen=True)
class NoTelemetry(JsonMixin):
    reason: str  # why nothing can be sampled here, in words (and a hint)
