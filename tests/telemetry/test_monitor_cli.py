"""`zluda-run --monitor -- CMD` through the real console entry, against a stand-in release and a
fake amdgpu sysfs tree (ZLUDA_RUNNER_ROOT): one GPU line at exit, the idle warning, the workload's
exit code unchanged."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.golden import assert_golden
from tests.telemetry.fake_sysfs import GIB, FakeCard, add_card, add_kfd, card_device, one_gpu_host
from zluda_runner.report.telemetry_view import IDLE_POINTER

WAIT_FOR_READ = Path(__file__).with_name("wait_for_read.py")


def _monitor(root: Path, release: Path, workload: list[str], tmp_path: Path,
             **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")}
    env.update(ZLUDA_RUNNER_ROOT=str(root), PYWRAP_PYTHON=sys.executable, **extra_env)
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    args = ["--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(release), "--monitor", "--"]
    return subprocess.run([sys.executable, "-m", "zluda_runner", *args, *workload], env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def _gpu_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("GPU ", "warning: the workload"))]


def _timeless(*lines: str) -> str:
    """The lines with the run's length and its count of samples (the sampler's timing) as ``<took>``."""
    return "".join(re.sub(r"\b\d+\.\d s, \d+ samples?\b", "<took>", line) + "\n" for line in lines)


def _sampled_workload(root: Path, card: int, code: int, pywrap: Path) -> list[str]:
    """A CPU-only Python run that ends once the sampler has read the GPU twice while it ran."""
    busy = card_device(root, card) / "gpu_busy_percent"
    return [str(pywrap), str(WAIT_FOR_READ), str(busy), "2", str(code)]


def test_an_idle_gpu_during_a_cpu_only_run_is_called_out(
    tmp_path: Path, standin_release: Path, pywrap: Path
) -> None:
    root = tmp_path / "root"
    card = one_gpu_host(root, busy=2, vram_used=GIB, power_uw=12_000_000)
    proc = _monitor(root, standin_release, _sampled_workload(root, card.card, 7, pywrap), tmp_path)
    assert proc.returncode == 7, proc.stderr  # the workload's own exit code
    line, warning = _gpu_lines(proc.stderr)
    assert_golden("monitor_idle_gpu", _timeless(line, warning))  # the figures, and the pointer to the fixes


def test_a_busy_gpu_gives_its_figures_and_no_warning(
    tmp_path: Path, standin_release: Path, pywrap: Path
) -> None:
    root = tmp_path / "root"
    card = one_gpu_host(root, busy=64, vram_used=6 * GIB, power_uw=230_000_000, temp_mc=71_000)
    proc = _monitor(root, standin_release, _sampled_workload(root, card.card, 0, pywrap), tmp_path)
    assert proc.returncode == 0, proc.stderr
    (line,) = _gpu_lines(proc.stderr)
    assert_golden("monitor_busy_gpu", _timeless(line))


def test_the_gpu_is_the_one_hip_visible_devices_picks(
    tmp_path: Path, standin_release: Path, pywrap: Path
) -> None:
    root = tmp_path / "root"
    first = FakeCard(card=1, render_minor=128, bus=3, name="AMD Radeon RX 7900 XTX")
    second = FakeCard(card=2, render_minor=129, bus=4, name="AMD Radeon RX 7600", vram_total=8 * GIB)
    add_card(root, first, busy=90)
    add_card(root, second, busy=1)
    add_kfd(root, [first, second])
    workload = _sampled_workload(root, second.card, 0, pywrap)
    proc = _monitor(root, standin_release, workload, tmp_path, HIP_VISIBLE_DEVICES="1")
    assert proc.returncode == 0, proc.stderr
    line, _warning = _gpu_lines(proc.stderr)
    which = "card2 (AMD Radeon RX 7600): HIP device 0, KFD GPU 1 of 2 (HIP_VISIBLE_DEVICES=1)"
    assert line.startswith(f"GPU {which}: busy mean 1% peak 1%, ")
    assert "of 8.0 GiB" in line


def test_no_telemetry_is_one_honest_line(tmp_path: Path, standin_release: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()  # no /sys/class/drm at all
    proc = _monitor(root, standin_release, ["sh", "-c", "exit 5"], tmp_path)
    assert proc.returncode == 5, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("GPU telemetry")]
    assert line.startswith("GPU telemetry: none (no amdgpu card in /sys/class/drm")
    assert IDLE_POINTER not in " ".join(proc.stderr.split())  # no idle-GPU warning: nothing was read


def test_the_api_run_hears_the_gpu_trace(tmp_path: Path, standin_release: Path, pywrap: Path,
                                         monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``zluda_runner.run(..., on_telemetry=)``: the library's run samples the GPU as --monitor does and
    hands the trace over once the workload has exited; the exit status is the workload's."""
    import zluda_runner as zr
    from zluda_runner.telemetry.model import GpuTrace

    root = tmp_path / "root"
    card = one_gpu_host(root, busy=55, vram_used=3 * GIB)
    monkeypatch.setenv("ZLUDA_RUNNER_ROOT", str(root))
    monkeypatch.setenv("PYWRAP_PYTHON", sys.executable)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    heard: list[object] = []
    options = zr.Options(cache_dir=tmp_path / "cache", zluda_dir=standin_release)
    code = zr.run(_sampled_workload(root, card.card, 5, pywrap), options, on_telemetry=heard.append)
    assert code == 5
    (trace,) = heard
    assert isinstance(trace, GpuTrace)
    summary = trace.summary()
    assert summary.busy_peak == 55 and summary.vram_peak == 3 * GIB and summary.used_gpu is True
