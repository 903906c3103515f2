"""The x86-64 gate: on another processor the CLI says ZLUDA is x86-64 only, before doing anything."""

from __future__ import annotations

import json
import subprocess
import sys


def _as_machine(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\nimport zluda_runner.core.arch as arch\n"
        f"arch.machine = lambda: {name!r}\n"
        "from zluda_runner.cli import main\n"
        f"main({list(args)!r})\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_run_on_another_processor_says_x86_64_only() -> None:
    proc = _as_machine("aarch64", "--", "true")
    assert proc.returncode == 1 and "hint:" in proc.stderr and "Traceback" not in proc.stderr
    as_json = json.loads(_as_machine("aarch64", "--json", "--", "true").stdout)
    assert as_json["kind"] == "unsupported-arch" and as_json["exit_code"] == 1, as_json
    assert "x86-64" in as_json["error"] and "aarch64" in as_json["error"], as_json  # needed, found


def test_commands_that_need_no_gpu_work_anywhere() -> None:
    proc = _as_machine("aarch64", "releases", "--os", "linux", "--cuda", "13", "--hip", "6.2")
    assert proc.returncode == 0, proc.stderr
    assert "x86-64" not in proc.stderr
