"""``import zluda_runner`` stays cheap: the API's names are imported on first use, and the API itself
imports no stage until it is called (an embedding launcher pays nothing for what it does not use)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("zluda_runner.doctor", "zluda_runner.probe", "zluda_runner.launch", "zluda_runner.inspection",
         "zluda_runner.results", "zluda_runner.release.fetch", "torch", "rich", "click", "requests", "pefile",
         "elftools")


def _imported(code: str) -> list[str]:
    """The modules running CODE imported, in a fresh interpreter (what ``sys.modules`` gained: this
    sees imports made by ``importlib`` too, which ``-X importtime`` does not report)."""
    probe = (f"import sys\nbefore = set(sys.modules)\n{code}\n"
             "print(*sorted(set(sys.modules) - before), sep='\\n')")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return proc.stdout.split()


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


def test_a_launch_through_the_cli_imports_only_the_api_it_calls() -> None:
    """``zluda-run python x.py`` loads the run command: it pays for the API modules it calls (options,
    launching, evidence), not for the cache, the results store or the releases listing."""
    modules = _imported("from zluda_runner.cli import main_group; from zluda_runner.commands import "
                        "load_command; load_command('run')")
    api = sorted(m for m in modules if m.startswith("zluda_runner.api"))
    assert api == ["zluda_runner.api", "zluda_runner.api.evidence", "zluda_runner.api.launching",
                   "zluda_runner.api.options"], api
    assert {m.split(".")[0] for m in _heavy(modules)} == {"click"}, _heavy(modules)  # click: the CLI itself
