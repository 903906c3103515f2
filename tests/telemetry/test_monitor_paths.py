"""`zluda-run --monitor` with `--verify-load` or `--trace` (issue 23): the same one GPU line at exit as a
plain run, after the path's own view, the workload's exit code unchanged; and, since those paths record
their run in the results store, the GPU summary recorded with it (a ``gpu`` item that counts neither as
passing nor as failing). Through the real console entry, against a stand-in release and a fake amdgpu
sysfs tree (tests/telemetry/fake_sysfs.py); the workload waits for the sampler's reads (no timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.telemetry.fake_sysfs import GIB, card_device, one_gpu_host

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="amdgpu sysfs and inotify")

WAIT_FOR_READ = Path(__file__).with_name("wait_for_read.py")


def _zluda_run(root: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")}
    env.update(ZLUDA_RUNNER_ROOT=str(root), PYWRAP_PYTHON=sys.executable,
               XDG_CACHE_HOME=str(tmp_path / "xdg"))
    argv = [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "cache"), *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180, check=False)


def _busy_host(root: Path) -> Path:
    """One card 64% busy with 6 GiB of 16 in use; the file the sampler reads to know it ran."""
    card = one_gpu_host(root, busy=64, vram_used=6 * GIB, power_uw=230_000_000)
    return card_device(root, card.card) / "gpu_busy_percent"


def _gpu_line(stderr: str) -> str:
    (line,) = [x for x in stderr.splitlines() if x.startswith(("GPU ", "warning: the workload did not"))]
    return line


def _recorded_gpu(root: Path, tmp_path: Path, kind: str) -> dict[str, object] | None:
    listed = _zluda_run(root, tmp_path, "--json", "results", "list", "--kind", kind)
    [run] = json.loads(listed.stdout)["runs"]
    shown = json.loads(_zluda_run(root, tmp_path, "--json", "results", "show", run["run_id"]).stdout)["run"]
    gpu = [item for item in shown["items"] if item["item"] == "gpu"]
    return gpu[0] if gpu else None


def test_monitor_with_verify_load(tmp_path: Path, standin_release: Path, pywrap: Path) -> None:
    root = tmp_path / "root"
    busy = _busy_host(root)
    workload = [str(pywrap), str(WAIT_FOR_READ), str(busy), "2", "5"]
    proc = _zluda_run(root, tmp_path, "--zluda-dir", str(standin_release), "--monitor", "--verify-load", "--",
                      *workload)
    assert proc.returncode == 5, proc.stderr  # the workload's own code: no binding failed
    assert "libcuda.so.1" in proc.stderr  # the evidence, binding by binding
    line = _gpu_line(proc.stderr)
    assert line.startswith("GPU card1 (AMD Radeon RX 7900 XTX): busy mean 64% peak 64%, ")
    assert "6.0 GiB" in line and "16.0 GiB" in line  # the VRAM peak and the card's total
    assert proc.stderr.rstrip().endswith(line)  # last, after the evidence, as on the plain run path
    gpu = _recorded_gpu(root, tmp_path, "verify-load")
    assert gpu is not None and gpu["status"] == "used" and gpu["ok"] is None
    numbers = gpu["numbers"]
    assert isinstance(numbers, dict) and numbers["busy_peak"] == 64 and numbers["vram_peak"] == 6 * GIB


def test_verify_load_without_monitor_records_no_gpu(tmp_path: Path, standin_release: Path) -> None:
    root = tmp_path / "root"
    _busy_host(root)
    proc = _zluda_run(root, tmp_path, "--zluda-dir", str(standin_release), "--verify-load", "--", "sh", "-c",
                      "exit 0")
    assert proc.returncode == 0, proc.stderr
    assert not [x for x in proc.stderr.splitlines() if x.startswith("GPU ")]
    assert _recorded_gpu(root, tmp_path, "verify-load") is None


def test_monitor_with_trace(tmp_path: Path, standin_release: Path, pywrap: Path) -> None:
    root = tmp_path / "root"
    busy = _busy_host(root)
    out = tmp_path / "trace.json"
    workload = [str(pywrap), str(WAIT_FOR_READ), str(busy), "2", "7"]
    proc = _zluda_run(root, tmp_path, "--zluda-dir", str(standin_release), "--monitor", "--trace",
                      "--trace-out", str(out), "--", *workload)
    assert proc.returncode == 7, proc.stderr
    assert json.loads(out.read_text())["exit_code"] == 7
    line = _gpu_line(proc.stderr)
    assert line.startswith("GPU card1 (AMD Radeon RX 7900 XTX): busy mean 64% peak 64%, ")
    gpu = _recorded_gpu(root, tmp_path, "trace")
    assert gpu is not None and gpu["status"] == "used"


def test_monitor_with_verify_load_and_an_idle_gpu_warns(tmp_path: Path, standin_release: Path,
                                                       pywrap: Path) -> None:
    root = tmp_path / "root"
    card = one_gpu_host(root, busy=1, vram_used=GIB)
    workload = [str(pywrap), str(WAIT_FOR_READ), str(card_device(root, card.card) / "gpu_busy_percent"), "2",
                "0"]
    proc = _zluda_run(root, tmp_path, "--zluda-dir", str(standin_release), "--monitor", "--verify-load",
                      "--json", "--", *workload)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verify_load"]["ok"] is True  # --json: the evidence alone on stdout
    assert any(x.startswith("warning: the workload did not use the GPU") for x in proc.stderr.splitlines())
    gpu = _recorded_gpu(root, tmp_path, "verify-load")
    assert gpu is not None and gpu["status"] == "idle"
