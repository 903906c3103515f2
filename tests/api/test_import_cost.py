"""``import zluda_runner`` stays cheap: the API's names are imported on first use, and the API itself
imports no stage until it is called (an embedding launcher pays nothing for what it does not use)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("zluda_runner.doctor", "zluda_runner.probe", "zluda_runner.launch", "zluda_runner.inspection",
         "zluda_runner.results", "zluda_runner.release.fetch", "torch", "rich", "click", "requests", "pefile",
         "elftools")


def _imported(code: str) -> list[str]:
    """The modules ``python -X importtime -c CODE`` imported (its own report, on stderr)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          check=True)
    return [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:")]


def _heavy(modules: list[str]) -> list[str]:
    return sorted({m for m in modules for h in HEAVY if m == h or m.startswith(h + ".")})


def test_import_zluda_runner_imports_nothing_else() -> None:
    modules = _imported("import zluda_runner")
    assert "zluda_runner" in modules
    assert [m for m in modules if m.startswith("zluda_runner.")] == []


def test_the_api_is_light_until_called() -> None:
    modules = _imported("import zluda_runner as zr; zr.Options; zr.plan_command; zr.placed; zr.run_doctor")
    assert "zluda_runner.api.launching" in modules
    assert _heavy(modules) == []


def test_the_check_sees_a_heavy_import() -> None:
    """The check above can fail: importing the doctor is seen."""
    assert "zluda_runner.doctor" in _heavy(_imported("import zluda_runner.doctor"))
