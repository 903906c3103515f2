"""The x86-64 gate: on another processor the CLI says ZLUDA is x86-64 only, before doing anything."""

from __future__ import annotations

import subprocess
import sys


def _as_machine(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import platform, sys\n"
        f"platform.machine = lambda: {name!r}\n"
        "from zluda_runner.cli import main\n"
        f"main({list(args)!r})\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_run_on_another_processor_says_x86_64_only() -> None:
    proc = _as_machine("aarch64", "--", "true")
    assert proc.returncode == 1
    assert "error: ZLUDA is x86-64 only; this machine is aarch64" in proc.stderr
    assert "hint:" in proc.stderr and "Traceback" not in proc.stderr


def test_commands_that_need_no_gpu_work_anywhere() -> None:
    proc = _as_machine("aarch64", "releases", "--os", "linux", "--cuda", "13", "--hip", "6.2")
    assert proc.returncode == 0, proc.stderr
    assert "x86-64 only" not in proc.stderr
