"""``zluda-run --help`` lists the commands from the command table, importing none of them, and the listing
is the one click makes from the commands themselves, at every width."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from zluda_runner.cli import main_group
from zluda_runner.commands import COMMAND_TABLE, load_command

COMMAND_MODULES = sorted({f"zluda_runner.commands.{module}" for module, _ in COMMAND_TABLE.values()})


def _commands_imported(*argv: str) -> list[str]:
    """The command modules a fresh interpreter imported running ``zluda-run ARGV``."""
    code = ("import sys\nfrom zluda_runner.cli import main\ntry:\n    main(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            "print(*sorted(m for m in sys.modules if m.startswith('zluda_runner.commands.')), sep='\\n')")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
    return [m for m in proc.stdout.split() if m in COMMAND_MODULES]


@pytest.mark.parametrize("width", [40, 80, 120])
def test_the_listing_is_what_click_makes_of_the_commands(width: int) -> None:
    ours = click.HelpFormatter(width=width)
    main_group.format_commands(click.Context(main_group), ours)
    group = click.Group("zluda-run", commands=[c for n in COMMAND_TABLE if (c := load_command(n))])
    theirs = click.HelpFormatter(width=width)
    group.format_commands(click.Context(group), theirs)
    assert ours.getvalue() == theirs.getvalue()
    assert ours.getvalue().count("\n") == len(COMMAND_TABLE) + 1


def test_help_imports_no_command() -> None:
    assert _commands_imported("--help") == []


def test_a_command_s_help_imports_just_its_module() -> None:
    """(The check of the test above: it sees a command's module when one is imported.)"""
    assert _commands_imported("plan", "--help") == ["zluda_runner.commands.launching"]
    assert _commands_imported("results", "--help") == ["zluda_runner.commands.results"]

