"""``zluda-run --help`` lists the commands from the command table, importing none of them (that the listing
is the one click makes from the commands themselves, at every width: tests/commands/test_helptext.py)."""

from __future__ import annotations

import subprocess
import sys

from zluda_runner.commands import COMMAND_TABLE

COMMAND_MODULES = sorted({f"zluda_runner.commands.{module}" for module, _ in COMMAND_TABLE.values()})


def _commands_imported(*argv: str) -> list[str]:
    """The command modules a fresh interpreter imported running ``zluda-run ARGV``."""
    code = ("import sys\nfrom zluda_runner.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            "print(*sorted(m for m in sys.modules if m.startswith('zluda_runner.commands.')), sep='\\n')")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
    return [m for m in proc.stdout.split() if m in COMMAND_MODULES]


def test_help_imports_no_command() -> None:
    assert _commands_imported("--help") == []


def test_a_command_s_help_imports_just_its_module() -> None:
    """(The check of the test above: it sees a command's module when one is imported.)"""
    assert _commands_imported("plan", "--help") == ["zluda_runner.commands.launching"]
    assert _commands_imported("results", "--help") == ["zluda_runner.commands.results"]

