"""The sampler against a fake amdgpu tree that a real workload updates while it runs; bounded
memory; the thread stops with the workload."""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from tests.telemetry.fake_sysfs import GIB, card_device, hwmon_dir, one_gpu_host, write_atomic
from zluda_runner.launch.process import run_process
from zluda_runner.telemetry.amdgpu import AmdgpuSysfs, open_amdgpu
from zluda_runner.telemetry.model import GpuReading, GpuTrace
from zluda_runner.telemetry.sampler import THREAD_NAME, Sampling
from zluda_runner.telemetry.watch import monitored

UPDATER = Path(__file__).with_name("gpu_updater.py")
WAIT_FOR_READ = Path(__file__).with_name("wait_for_read.py")

# [busy %, VRAM bytes, power µW]: consecutive values differ, so every step shows in the samples
STEPS = [
    [35, 2 * GIB, 90_000_000],
    [80, 5 * GIB, 240_000_000],
    [55, 3 * GIB, 180_000_000],
    [100, 4 * GIB, 260_000_000],
    [20, GIB + GIB // 2, 60_000_000],
]


class CountingSource:
    """The real sysfs source; after each reading the count of readings goes to a file the
    workload waits on (tests/telemetry/gpu_updater.py)."""

    def __init__(self, inner: AmdgpuSysfs, reads_file: Path) -> None:
        self.inner, self.reads_file, self.count = inner, reads_file, 0
        self.backend, self.device = inner.backend, inner.device

    def vram_total(self) -> int | None:
        return self.inner.vram_total()

    def read(self) -> GpuReading:
        reading = self.inner.read()
        self.count += 1
        write_atomic(self.reads_file, str(self.count))
        return reading

    def close(self) -> None:
        self.inner.close()


def _distinct_in_order(values: list[object]) -> list[object]:
    out: list[object] = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return out


def _sampling_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


def test_summary_matches_what_a_running_workload_wrote(tmp_path: Path) -> None:
    root = tmp_path / "root"
    card = one_gpu_host(root, busy=0, vram_used=GIB, power_uw=15_000_000)
    inner = open_amdgpu(root=root, env={})
    assert isinstance(inner, AmdgpuSysfs)
    source = CountingSource(inner, tmp_path / "reads")
    pid_file = tmp_path / "pid"
    workload = [sys.executable, str(UPDATER), str(card_device(root, card.card)), str(hwmon_dir(root, card)),
                str(source.reads_file), str(pid_file), json.dumps(STEPS)]
    with Sampling(source, interval_s=0.005) as sampling:
        code = run_process(workload, dict(os.environ))
    trace = sampling.result()
    assert code == 0
    samples = list(trace.samples)
    # every value written was seen, in the order written, and nothing else
    assert _distinct_in_order([s.busy_percent for s in samples]) == [0.0, *(float(b) for b, _, _ in STEPS)]
    assert _distinct_in_order([s.vram_used for s in samples]) == [GIB, *(v for _, v, _ in STEPS)]
    assert _distinct_in_order([s.power_w for s in samples]) == [15.0, *(p / 1e6 for _, _, p in STEPS)]
    assert all(s.temp_c == 45.0 for s in samples)
    summary = trace.summary()
    running = samples[1:]  # the first is the baseline, read as the workload started
    assert trace.while_running() == tuple(running) and samples[0].t == 0.0
    assert summary.samples == len(running) and trace.dropped == 0
    assert summary.busy_peak == 100.0 and summary.vram_peak == 5 * GIB and summary.power_peak == 260.0
    busy = [s.busy_percent for s in running if s.busy_percent is not None]
    assert summary.busy_mean == pytest.approx(sum(busy) / len(busy))
    power = [s.power_w for s in running if s.power_w is not None]
    assert summary.power_mean == pytest.approx(sum(power) / len(power))
    assert 0.0 < summary.busy_mean < 100.0
    # before: what the tree held when sampling began; after: the workload's last step
    assert (trace.vram_before, trace.vram_after) == (GIB, GIB + GIB // 2)
    assert summary.vram_delta == GIB // 2 and summary.vram_total == 16 * GIB
    assert summary.used_gpu is True and summary.temp_peak == 45.0
    assert [s.t for s in samples] == sorted(s.t for s in samples) and samples[0].t == 0.0
    # sampling stopped with the workload: no thread, and the workload's process is gone
    assert not _sampling_threads()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_an_idle_gpu_reads_as_not_used(tmp_path: Path) -> None:
    card = one_gpu_host(tmp_path, busy=2, vram_used=GIB)
    busy_file = card_device(tmp_path, card.card) / "gpu_busy_percent"
    workload = [sys.executable, str(WAIT_FOR_READ), str(busy_file), "2", "0"]  # CPU only, sampled twice
    code, trace = monitored(lambda: run_process(workload, dict(os.environ)), env={}, root=tmp_path)
    assert code == 0 and isinstance(trace, GpuTrace)
    summary = trace.summary()
    assert summary.samples >= 1
    assert summary.used_gpu is False and summary.busy_peak == 2.0 and summary.vram_delta == 0
    assert not _sampling_threads()


def test_a_run_shorter_than_one_interval_cannot_tell(tmp_path: Path) -> None:
    one_gpu_host(tmp_path, busy=0)
    code, trace = monitored(lambda: 5, env={}, root=tmp_path, interval_s=3600)
    assert code == 5 and isinstance(trace, GpuTrace)
    summary = trace.summary()
    assert (summary.samples, summary.used_gpu, summary.busy_peak) == (0, None, None)
    assert len(trace.samples) == 1 and summary.vram_delta == 0


class Ticker:
    """A source that counts its readings and says when ``enough`` have been taken."""

    backend, device = "amdgpu-sysfs", "a counter"

    def __init__(self, enough: int) -> None:
        self.count, self.enough, self.reached = 0, enough, threading.Event()

    def vram_total(self) -> int | None:
        return 100

    def read(self) -> GpuReading:
        self.count += 1
        if self.count >= self.enough:
            self.reached.set()
        return GpuReading(busy_percent=float(self.count % 100), vram_used=self.count)

    def close(self) -> None:
        return None


def test_memory_stays_bounded_by_thinning_and_slowing(tmp_path: Path) -> None:
    source = Ticker(enough=40)
    with Sampling(source, interval_s=0.001, max_samples=16) as sampling:
        assert source.reached.wait(120), "the sampler never took 40 readings"
    trace = sampling.result()
    taken = source.count - 1  # the last reading is vram_after, not a sample
    assert len(trace.samples) < 16 and trace.dropped > 0
    assert len(trace.samples) + trace.dropped == taken
    doublings = round(math.log2(trace.interval_s / 0.001))
    assert doublings >= 1 and trace.interval_s == pytest.approx(0.001 * 2**doublings)
    assert trace.vram_after == source.count and trace.vram_before == 1
    ts = [s.t for s in trace.samples]
    assert ts == sorted(ts) and len(set(ts)) == len(ts)
    assert not _sampling_threads()


def test_sampling_stops_when_the_workload_fails(tmp_path: Path) -> None:
    one_gpu_host(tmp_path)

    def crash() -> int:
        raise RuntimeError("the workload could not start")

    with pytest.raises(RuntimeError):
        monitored(crash, env={}, root=tmp_path, interval_s=0.01)
    assert not _sampling_threads()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads a thread's signal mask in /proc")
def test_the_sampling_thread_blocks_every_signal(tmp_path: Path) -> None:
    """A SIGCHLD or Ctrl-C must reach the thread that waits for the workload (launch/process.py
    waits with sigwaitinfo), never the sampler's."""
    with Sampling(Ticker(enough=1), interval_s=0.05):
        (thread,) = _sampling_threads()
        status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
        blocked = int(next(line for line in status.splitlines() if line.startswith("SigBlk:")).split()[1], 16)
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        assert blocked & (1 << (sig - 1)), f"{sig.name} is not blocked on the sampling thread"
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the caller's own mask is as it was


def test_a_trace_round_trips_through_json(tmp_path: Path) -> None:
    """What poc records and plots: the trace in JSON and back, summary and all."""
    one_gpu_host(tmp_path, busy=40, vram_used=2 * GIB)
    card_busy = card_device(tmp_path, 1) / "gpu_busy_percent"
    workload = [sys.executable, str(WAIT_FOR_READ), str(card_busy), "1", "0"]
    _code, trace = monitored(lambda: run_process(workload, dict(os.environ)), env={}, root=tmp_path)
    assert isinstance(trace, GpuTrace) and len(trace.samples) >= 2
    again = GpuTrace.from_json(trace.to_json())
    assert again == trace and again.summary() == trace.summary()
    assert isinstance(again.samples, tuple) and again.summary().busy_peak == 40.0


class Failing(Ticker):
    """A back end whose every other reading raises (a driver's surprise)."""

    def vram_total(self) -> int | None:
        raise ValueError("cannot convert float NaN to integer")

    def read(self) -> GpuReading:
        reading = super().read()
        if self.count % 2:
            raise ValueError("cannot convert float NaN to integer")
        return reading


def test_a_back_end_that_raises_is_no_reading_never_the_end_of_sampling() -> None:
    """The raise ended the sampling thread, then came out of the run after the workload ran (poc's
    report lost, ``--monitor`` a traceback)."""
    source = Failing(enough=20)
    with Sampling(source, interval_s=0.001) as sampling:
        assert source.reached.wait(120), "the sampler stopped reading"
    trace = sampling.result()  # the reading after the run raised too (odd count) or not: no exception
    assert trace.vram_total is None and trace.vram_before is None  # the first reading raised
    assert any(s.vram_used is None for s in trace.samples) and any(s.vram_used for s in trace.samples)
    assert not _sampling_threads()
