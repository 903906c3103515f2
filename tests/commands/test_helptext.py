"""``zluda-run --help`` (``-h``, ``--version``) is one page made from the option and command tables
(commands/helptext): click's group shows it for its own top-level help, and the command line alone is
answered with it without importing click (issue 28: ``--help`` at the interpreter's floor, also under
Wine). The page is, byte for byte, what click renders of the group and its real commands, at every width."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest

from tests.golden import assert_golden
from zluda_runner.commands.helptext import main_help, version_line
from zluda_runner.commands.toplevel import main_group

# click's own rendering of the top-level help, through click's path (its group, its echo)
CLICK_SIDE = ("import sys\nfrom zluda_runner.core.textio import make_standard_streams_safe\n"
              "from zluda_runner.commands.toplevel import main_group\nmake_standard_streams_safe()\n"
              "main_group.main(sys.argv[1:], prog_name='zluda-run')\n")
# the command line's own path (cli.main), then which modules it had imported
FAST_SIDE = ("import json, sys\nfrom zluda_runner.cli import main\ntry:\n    main(sys.argv[1:])\n"
             "except SystemExit as exc:\n    code = exc.code\n"
             "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)\n")


def _click_rendering(width: int) -> str:
    """What click's own ``Group.format_help`` writes for the group (its real commands imported for their
    help), at ``width``."""
    ctx = click.Context(main_group, info_name="zluda-run", **main_group.context_settings)
    formatter = click.HelpFormatter(width=width)
    click.Group.format_help(main_group, ctx, formatter)
    return formatter.getvalue().rstrip("\n")


def _env(columns: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    return env


def _run(code: str, args: list[str], columns: str | None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, env=_env(columns),
                          stdin=subprocess.DEVNULL, timeout=120, check=False)


def test_the_page_is_click_s_rendering_of_the_group_at_every_width() -> None:
    for width in range(1, 131):
        assert main_help(width) == _click_rendering(width), width


def test_click_s_group_shows_the_page() -> None:
    for width in (50, 78, 100):
        ctx = click.Context(main_group, info_name="zluda-run", **main_group.context_settings)
        formatter = click.HelpFormatter(width=width)
        main_group.format_help(ctx, formatter)
        assert formatter.getvalue() == main_help(width)


@pytest.mark.parametrize("columns", ["40", "80", "120", None])
@pytest.mark.parametrize("word", ["--help", "-h", "--version"])
def test_the_command_line_answers_with_click_s_bytes(word: str, columns: str | None) -> None:
    fast = _run(FAST_SIDE, [word], columns)
    theirs = _run(CLICK_SIDE, [word], columns)
    assert (fast.returncode, json.loads(fast.stderr)[0]) == (0, 0)
    assert theirs.returncode == 0
    assert fast.stdout == theirs.stdout
    width = 50 if columns == "40" else 78  # click's: the terminal's (80 piped) up to 80, less 2, at least 50
    page = version_line() if word == "--version" else main_help(width)
    assert fast.stdout.decode().replace(os.linesep, "\n") == page + "\n"


def test_the_page_at_80_columns_is_the_golden_one() -> None:
    out = _run(FAST_SIDE, ["--help"], "80")
    assert_golden("help-top-level", out.stdout.decode())
    assert _run(FAST_SIDE, ["--version"], "80").stdout.decode() == version_line() + "\n"


@pytest.mark.parametrize("word", ["--help", "-h", "--version"])
def test_the_command_line_s_help_imports_no_click(word: str) -> None:
    code, modules = json.loads(_run(FAST_SIDE, [word], "80").stderr)
    assert code == 0
    assert [m for m in modules if m == "click" or m.startswith(("click.", "zluda_runner.api"))] == []
    assert "textwrap" not in modules and "shutil" not in modules


@pytest.mark.parametrize("args", [["plan", "--help"], ["--help", "plan"], ["--json", "--help"]])
def test_anything_else_with_help_is_click_s(args: list[str]) -> None:
    """(The check of the test above: the same probe sees click where click answers.)"""
    code, modules = json.loads(_run(FAST_SIDE, args, "80").stderr)
    assert code == 0 and "click" in modules
