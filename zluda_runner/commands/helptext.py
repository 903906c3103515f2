"""``zluda-run --help`` and ``--version``: the one home of what they say.

The top-level help page is made here from the global options' table
(:data:`~zluda_runner.commands.global_options.GLOBAL_OPTIONS`) and the command table
(:data:`~zluda_runner.commands.COMMAND_TABLE`), laid out by click's rules
(:mod:`zluda_runner.commands.helpwrap`). click's group shows this page for its own top-level help
(:meth:`zluda_runner.commands.toplevel.FallthroughGroup.format_help`), and ``zluda-run --help`` (or
``-h``, ``--version``) alone on the command line is answered from here without importing click
(:func:`answer`, from :func:`zluda_runner.cli.main`). ``zluda-run CMD --help`` is click's.
"""

from __future__ import annotations

import sys

from zluda_runner.commands import COMMAND_TABLE
from zluda_runner.commands.global_options import GLOBAL_OPTIONS
from zluda_runner.commands.helpwrap import Page, short_help
from zluda_runner.core.version import __version__

PROG = "zluda-run"
HELP_OPTION_NAMES = ("-h", "--help")
VERSION_OPTION = "--version"
VERSION_HELP = "Show the version and exit."
HELP_HELP = "Show this message and exit."  # click's own words for its help option
MAIN_HELP = """Run unmodified CUDA programs on AMD GPUs through ZLUDA, and prove how well they run.

\b
  zluda-run python infer.py            fetch the right ZLUDA, shim, launch
  zluda-run inspect                    what does this torch build need?
  zluda-run plan -- python infer.py    what would be done, and will it bind?
  zluda-run releases --os windows      which ZLUDA release fits?"""
MAX_WIDTH = 80  # click's HelpFormatter: the terminal's width up to this, less 2, at least 50
MIN_WIDTH = 50


def version_line() -> str:
    """What ``zluda-run --version`` says (click's words for its version option)."""
    return f"{PROG}, version {__version__}"


def help_width() -> int:
    """The width click's help page takes when nothing forces one: the terminal's
    (:func:`~zluda_runner.core.termsize.terminal_columns`) up to 80, less 2, at least 50."""
    from zluda_runner.core.termsize import terminal_columns

    return max(min(terminal_columns(), MAX_WIDTH) - 2, MIN_WIDTH)


def option_rows() -> list[tuple[str, str]]:
    """The Options section: ``--version``, each global option in the table's order, then the help option."""
    rows = [(o.name if o.flag else f"{o.name} {o.metavar or 'TEXT'}", o.help) for o in GLOBAL_OPTIONS]
    return [(VERSION_OPTION, VERSION_HELP), *rows, (", ".join(HELP_OPTION_NAMES), HELP_HELP)]


def command_rows(width: int) -> list[tuple[str, str]]:
    """The Commands section: each command (by name) and the table's line, shortened to fit ``width`` as
    click shortens a command's help."""
    names = sorted(COMMAND_TABLE)
    limit = width - 6 - max(map(len, names))
    return [(name, short_help(COMMAND_TABLE[name][1], limit)) for name in names]


def main_help(width: int, prog: str = PROG) -> str:
    """The top-level help page, ``width`` columns wide (no trailing newline)."""
    page = Page(width)
    page.usage(prog, "[OPTIONS] COMMAND [ARGS]...")
    page.text(MAIN_HELP)
    page.section("Options", option_rows())
    page.section("Commands", command_rows(width))
    return page.value()


def answer(args: list[str]) -> int | None:
    """``zluda-run --help`` (``-h``) or ``zluda-run --version`` said on stdout, exit status 0; None for
    any other command line (click's group reads it)."""
    if len(args) != 1 or args[0] not in (*HELP_OPTION_NAMES, VERSION_OPTION):
        return None
    text = version_line() if args[0] == VERSION_OPTION else main_help(help_width())
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0
