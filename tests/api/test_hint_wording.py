"""Every hint the library can raise, as a caller of the API reads it: no command-line flag outside a
backquoted command line the API has no call for (``zluda-run ab``, ``--trace``) or another program's
(``pip install --force-reinstall``); commands the API has become its functions."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from zluda_runner.api.options import for_caller

PACKAGE = Path(__file__).resolve().parents[2] / "zluda_runner"
FLAG = re.compile(r"(?<![\w-])--[a-z]")
API_COMMAND = re.compile(
    r"\bzluda-run (?:releases|fetch|inspect|plan|run|place|restore|status|probe|doctor)\b")


def _library_hints() -> list[tuple[str, str]]:
    """(where, text) of each ``hint=`` given to an error outside the CLI, its literal parts joined."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ("commands", "api", "cli.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "hint":
                text = "".join(c.value for c in ast.walk(node.value)
                               if isinstance(c, ast.Constant) and isinstance(c.value, str))
                if FLAG.search(text) or "zluda-run " in text:
                    found.append((f"{rel}:{node.value.lineno}", text))
    return found


HINTS = _library_hints()


def test_the_library_has_hints_that_name_flags() -> None:
    """What this file checks exists (issue 21 counted 74+ such hint lines)."""
    assert len(HINTS) > 50


@pytest.mark.parametrize(("where", "text"), HINTS, ids=[w for w, _ in HINTS])
def test_a_hint_as_the_caller_reads_it(where: str, text: str) -> None:
    worded = for_caller(text)
    plain = re.sub(r"`[^`]*`", "", worded)  # command lines to type, quoted, are what they are
    assert not FLAG.search(plain), worded
    assert not API_COMMAND.search(plain), worded
    for quoted in re.findall(r"`zluda-run [^`]*`", worded):
        assert not API_COMMAND.search(quoted) or "--trace" in quoted or "--verify-load" in quoted, worded


@pytest.mark.parametrize(("text", "worded"), [
    ("see `zluda-run plan -- CMD` for the full reasons; --force runs it anyway",
     "see zluda_runner.plan_command() for the full reasons; Options(force=True) runs it anyway"),
    ("pass --zluda-dir the folder you unpacked", "pass Options(zluda_dir=...) the folder you unpacked"),
    ("fetch the release again (zluda-run fetch) or check --zluda-dir",
     "fetch the release again (zluda_runner.fetch()) or check Options(zluda_dir=...)"),
    ("compare it: zluda-run ab --b-python PY", "compare it: `zluda-run ab --b-python PY`"),
    ("or reinstall torch (pip install --force-reinstall --no-deps torch==X); then",
     "or reinstall torch (`pip install --force-reinstall --no-deps torch==X`); then"),
    ("usage: zluda-run [OPTIONS] -- COMMAND [ARGS]...",
     "give the command as a sequence of words, its program first"),
    ("install it with `--archive FILE`", "install it with Options(archive=...)"),
    ("without --strict zluda-run goes on", "without strict=True zluda-run goes on"),
])
def test_wording_examples(text: str, worded: str) -> None:
    assert for_caller(text) == worded
