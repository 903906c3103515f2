"""examples/embed_launcher.py runs, as a user runs it, against a stand-in release: launch mode (Linux) and
place mode (a Windows-shaped torch/lib of PE stand-ins, put back byte for byte)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.api.conftest import snapshot

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embed_launcher.py"


def _example(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")}
    return subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_the_example_launches_under_a_standin_release(linux_release: Path, cuda_app: Path,
                                                      tmp_path: Path) -> None:
    proc = _example("--zluda-dir", str(linux_release), "--cache-dir", str(tmp_path / "cache"),
                    "--", str(cuda_app))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "create=0" in lines  # ZLUDA's stand-in answered (NVIDIA's original says 42)
    assert any(line.split()[:2] == ["ok", "libcublas.so.13"] for line in lines), lines
    assert lines[-1] == f"{cuda_app} exited with 0"


def test_the_example_places_runs_and_puts_back(windows_kit: tuple[Path, Path], windows_site: Path,
                                               tmp_path: Path) -> None:
    _, fork = windows_kit
    lib = windows_site / "torch" / "lib"
    before = snapshot(windows_site)
    check = (f"import sys; sys.exit(0 if open({str(lib / 'cublas64_11.dll')!r}, 'rb').read() == "
             f"open({str(fork / 'cublas.dll')!r}, 'rb').read() else 5)")  # the app sees ZLUDA's cuBLAS
    proc = _example("--zluda-dir", str(fork), "--cache-dir", str(tmp_path / "cache"), "--torch-lib", str(lib),
                    "--", sys.executable, "-c", check)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"restored {lib}" in proc.stdout and "placed " in proc.stdout
    assert snapshot(windows_site) == before


def test_the_example_reports_an_error_with_its_hint(tmp_path: Path) -> None:
    proc = _example("--zluda-dir", str(tmp_path / "nowhere"), "--", "true")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: ") and "hint: " in proc.stderr and "--zluda-dir" not in proc.stderr
