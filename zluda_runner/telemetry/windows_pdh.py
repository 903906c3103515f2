"""Windows: the OS's GPU performance counters through PDH (pdh.dll, via ctypes)."""

from __future__ import annotations

from zluda_runner.telemetry.model import NoTelemetry


def open_pdh() -> NoTelemetry:
    return NoTelemetry("Windows GPU counters are not built yet")
