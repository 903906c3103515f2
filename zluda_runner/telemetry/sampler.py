"""Pick a telemetry source for this host and sample it in the background while a workload runs."""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from zluda_runner.telemetry.model import GpuReading, GpuSample, GpuTrace, NoTelemetry
from zluda_runner.telemetry.source import TelemetrySource

__all__ = ["DEFAULT_INTERVAL_S", "DEFAULT_MAX_SAMPLES", "Sampling", "TelemetrySource", "open_source"]

DEFAULT_INTERVAL_S = 0.2
DEFAULT_MAX_SAMPLES = 4096  # ~14 minutes at the default rate before the first thinning
JOIN_TIMEOUT_S = 10.0  # one reading is a handful of bounded file reads: far below this
THREAD_NAME = "zluda-runner-telemetry"
T = TypeVar("T")


def _start_without_signals(thread: threading.Thread) -> None:
    """Start ``thread`` with every signal blocked (POSIX): a process-directed signal (SIGCHLD, the
    Ctrl-C that launch/process.py forwards through ``sigwaitinfo``) must never land on it."""
    if not hasattr(signal, "pthread_sigmask"):
        thread.start()
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        thread.start()  # a new thread inherits the mask of the thread that starts it
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _guarded(read: Callable[[], T], failed: T) -> T:
    """One reading of a source; ``failed`` when the back end raised: telemetry is evidence about the
    workload, and a back end's surprise (a driver's odd answer) must not end the sampling thread, nor
    raise out of the run after the workload ran (its report would be lost)."""
    try:
        return read()
    except Exception:  # any back end, any surprise: no reading
        return failed


def open_source(
    *,
    root: Path | None = None,
    env: Mapping[str, str] | None = None,
    native: bool = False,
    platform: str | None = None,
) -> TelemetrySource | NoTelemetry:
    """The telemetry source of the GPU the workload will use (``env``: the workload's environment,
    whose ``HIP_VISIBLE_DEVICES`` picks the GPU), or why there is none.  ``root``: a fake system
    tree (tests); ``native``: a run without ZLUDA, where NVML (NVIDIA) is tried first."""
    environ = env if env is not None else os.environ
    plat = platform or sys.platform
    reasons: list[str] = []
    if native and root is None:
        from zluda_runner.telemetry.nvml import open_nvml

        found = open_nvml(environ)
        if not isinstance(found, NoTelemetry):
            return found
        reasons.append(found.reason)
    if plat.startswith("linux"):
        from zluda_runner.telemetry.amdgpu import open_amdgpu

        amd = open_amdgpu(root=root, env=environ)
        if not isinstance(amd, NoTelemetry):
            return amd
        reasons.append(amd.reason)
    elif plat == "win32":
        from zluda_runner.telemetry.windows_pdh import open_pdh

        pdh = open_pdh(environ)
        if not isinstance(pdh, NoTelemetry):
            return pdh
        reasons.append(pdh.reason)
    else:
        reasons.append(f"no GPU telemetry back end for {plat}")
    return NoTelemetry("; ".join(reasons))


class Sampling:
    """A context manager: a daemon thread reads ``source`` every ``interval_s`` (a steady rate on a
    monotonic deadline schedule) until the block ends; memory stays bounded by ``max_samples``
    (reaching it drops every other sample and doubles the interval).  The source is not closed."""

    def __init__(
        self,
        source: TelemetrySource,
        interval_s: float = DEFAULT_INTERVAL_S,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self._source = source
        self._interval = interval_s
        self._max = max(2, max_samples)
        self._clock = clock
        self._samples: list[GpuSample] = []
        self._dropped = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._duration: float | None = None
        self._vram_total: int | None = None
        self._vram_before: int | None = None
        self._vram_after: int | None = None

    def __enter__(self) -> Sampling:
        self._vram_total = _guarded(self._source.vram_total, None)
        self._t0 = self._clock()
        first = self._read()
        self._vram_before = first.vram_used
        self._samples.append(GpuSample.at(0.0, first))
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        _start_without_signals(self._thread)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop and join the thread, then read VRAM once more (the workload has exited)."""
        if self._thread is None or self._duration is not None:
            return
        self._stop.set()
        self._thread.join(JOIN_TIMEOUT_S)
        self._duration = self._clock() - self._t0
        if not self._thread.is_alive():  # a reading stuck past the bound: the source is still in use
            self._vram_after = self._read().vram_used

    def _run(self) -> None:
        deadline = self._t0 + self._interval
        while not self._stop.wait(max(0.0, deadline - self._clock())):
            now = self._clock()
            reading = self._read()
            with self._lock:
                self._samples.append(GpuSample.at(now - self._t0, reading))
                if len(self._samples) >= self._max:
                    self._thin()
            # the next tick on the schedule; ticks missed (a slow read, a suspended machine) are skipped
            deadline += self._interval
            after = self._clock()
            if deadline <= after:
                deadline += self._interval * math.ceil((after - deadline) / self._interval + 1e-9)

    def _read(self) -> GpuReading:
        return _guarded(self._source.read, GpuReading())

    def _thin(self) -> None:
        kept = self._samples[::2]
        self._dropped += len(self._samples) - len(kept)
        self._samples = kept
        self._interval *= 2

    def result(self) -> GpuTrace:
        """The trace so far (complete once the block has ended)."""
        with self._lock:
            samples = tuple(self._samples)
            dropped, interval = self._dropped, self._interval
        return GpuTrace(
            device=self._source.device,
            backend=self._source.backend,
            interval_s=interval,
            vram_total=self._vram_total,
            vram_before=self._vram_before,
            vram_after=self._vram_after,
            samples=samples,
            dropped=dropped,
            duration_s=self._duration,
        )
