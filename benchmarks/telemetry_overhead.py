"""What GPU telemetry costs the workload: the CPU a sampling thread takes at the default rate.

For each source (a fake amdgpu sysfs tree in a temporary folder; the real /sys where it has an
amdgpu card; NVML where pynvml and an NVIDIA driver answer), the process's CPU time over
``--seconds`` of wall time with ``Sampling`` running, beside the same span idle (the floor); the
difference is the sampler's, printed as % of one core.  Also the cost of one reading (a tight loop).
Prints, never asserts. ``--smoke``: half a second per span (CI checks that it runs).

    python benchmarks/telemetry_overhead.py [--seconds 10] [--interval 0.2] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from zluda_runner.telemetry.model import NoTelemetry
from zluda_runner.telemetry.sampler import DEFAULT_INTERVAL_S, Sampling, open_source
from zluda_runner.telemetry.source import TelemetrySource


def fake_tree(root: Path) -> Path:
    """One amdgpu card (card1, renderD128) with its KFD node: the files the sampler reads."""
    device = root / "sys/class/drm/card1/device"
    for rel, text in {
        "uevent": "DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n",
        "gpu_busy_percent": "37\n",
        "mem_info_vram_used": f"{3 * 2**30}\n",
        "mem_info_vram_total": f"{16 * 2**30}\n",
        "hwmon/hwmon0/power1_average": "151000000\n",
        "hwmon/hwmon0/temp1_input": "61000\n",
    }.items():
        (device / rel).parent.mkdir(parents=True, exist_ok=True)
        (device / rel).write_text(text)
    (device / "drm/renderD128").mkdir(parents=True)
    node = root / "sys/class/kfd/kfd/topology/nodes/1"
    node.mkdir(parents=True)
    (node / "properties").write_text("simd_count 192\ngfx_target_version 110000\ndrm_render_minor 128\n")
    (node / "name").write_text("AMD Radeon RX 7900 XTX\n")
    return root


def cpu_over(seconds: float, source: TelemetrySource | None, interval: float) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, samples) of this process over ``seconds``, sampling or idle."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    samples = 0
    if source is None:
        time.sleep(seconds)
    else:
        with Sampling(source, interval) as sampling:
            time.sleep(seconds)
        samples = len(sampling.result().samples)
    return time.process_time() - cpu0, time.perf_counter() - wall0, samples


def per_read_us(source: TelemetrySource, n: int = 2000) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        source.read()
    return (time.perf_counter() - t0) / n * 1e6


def measure(label: str, source: TelemetrySource, seconds: float, interval: float) -> None:
    idle_cpu, idle_wall, _ = cpu_over(seconds, None, interval)
    cpu, wall, samples = cpu_over(seconds, source, interval)
    extra = max(0.0, cpu - idle_cpu * wall / idle_wall)
    print(f"{label}: {source.device}")
    print(f"  one reading: {per_read_us(source):.0f} µs")
    share = extra / wall * 100
    print(f"  sampling every {interval:g} s for {wall:.1f} s: {samples} samples, "
          f"{extra * 1000:.1f} ms CPU over the floor (the same span idle: {idle_cpu * 1000:.1f} ms) "
          f"= {share:.3f} % of one core")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S)
    parser.add_argument("--smoke", action="store_true", help="a tiny size, seconds: check that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.seconds = 0.5
    print(f"cpu count {os.cpu_count()}, load average {os.getloadavg() if hasattr(os, 'getloadavg') else '-'}")
    with tempfile.TemporaryDirectory() as tmp:
        fake = open_source(root=fake_tree(Path(tmp)), env={}, platform="linux")
        assert not isinstance(fake, NoTelemetry), fake.reason
        measure("fake amdgpu sysfs tree", fake, args.seconds, args.interval)
    for label, native in (("this host", False), ("this host, NVML (--native)", True)):
        real = open_source(env=os.environ, native=native)
        if isinstance(real, NoTelemetry):
            print(f"{label}: no telemetry ({real.reason})")
            continue
        try:
            measure(label, real, args.seconds, args.interval)
        finally:
            real.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
