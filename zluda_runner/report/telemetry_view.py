"""``--monitor``'s report: one line of what the GPU did while the workload ran, and a warning
when it stayed idle (the silent fall-back to the CPU)."""

from __future__ import annotations

from zluda_runner.core.units import format_bytes
from zluda_runner.telemetry.model import GpuSummary, GpuTrace, NoTelemetry

IDLE_POINTER = (
    "`zluda-run --verify-load -- CMD` (what bound) and `zluda-run doctor` (what the host lacks); "
    "README, Troubleshooting: 'falls back to CPU silently'"
)


def _signed_bytes(count: int) -> str:
    return ("-" if count < 0 else "+") + format_bytes(abs(count))


def _busy(s: GpuSummary) -> str:
    if s.busy_mean is None or s.busy_peak is None:
        return "busy n/a"
    return f"busy mean {s.busy_mean:.0f}% peak {s.busy_peak:.0f}%"


def _vram(s: GpuSummary) -> str:
    if s.vram_peak is None:
        return "VRAM n/a"
    text = f"VRAM peak {format_bytes(s.vram_peak)}"
    if s.vram_total:
        text += f" of {format_bytes(s.vram_total)}"
    if s.vram_delta is not None:
        text += f" (after run {_signed_bytes(s.vram_delta)})"
    return text


def _power(s: GpuSummary) -> str | None:
    if s.power_mean is None or s.power_peak is None:
        return None
    return f"power mean {s.power_mean:.0f} W peak {s.power_peak:.0f} W"


def monitor_lines(result: GpuTrace | NoTelemetry) -> list[str]:
    """The summary line (always one) and, when the GPU stayed idle the whole run, a warning."""
    if isinstance(result, NoTelemetry):
        return [f"GPU telemetry: none ({result.reason})"]
    s = result.summary()
    head = f"GPU {result.device}: "
    took = f"{s.duration_s:.1f} s"
    if s.samples == 0:
        return [head + f"the run ({took}) ended before the first sample (one per {result.interval_s:g} s): "
                "too short to tell whether it used the GPU" + (
                    f", VRAM after run {_signed_bytes(s.vram_delta)}" if s.vram_delta is not None else "")]
    temp = f"temp peak {s.temp_peak:.0f} C" if s.temp_peak is not None else None
    count = f"{s.samples} sample{'s' if s.samples != 1 else ''}"
    parts = [_busy(s), _vram(s), _power(s), temp, f"{took}, {count}"]
    lines = [head + ", ".join(p for p in parts if p)]
    if s.used_gpu is False:
        lines.append(f"warning: the workload did not use the GPU: torch saw no device? see {IDLE_POINTER}")
    return lines


def render_monitor(result: GpuTrace | NoTelemetry) -> str:
    return "\n".join(monitor_lines(result))
