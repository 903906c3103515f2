"""Every hint the library can raise, as a caller of the API reads it: no command-line flag outside
another program's command line (``pip install --force-reinstall``); every ``zluda-run`` command becomes
the API function that does it (``ab`` -> ``run_ab()``, ``--trace`` -> ``trace_launch()``). And the
command line, which calls the same API, reads the library's own words (:func:`worded_for`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import zluda_runner as zr
from zluda_runner.api.options import for_caller, worded_for

PACKAGE = Path(__file__).resolve().parents[2] / "zluda_runner"
FLAG = re.compile(r"(?<![\w-])--[a-z]")
API_COMMAND = re.compile(
    r"\bzluda-run (?:releases|fetch|inspect|plan|run|place|restore|status|probe|doctor|ab|warmup|trace-report"
    r"|cache|manifest|results)\b")


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
    assert not API_COMMAND.search(worded), worded
    for call in re.findall(r"zluda_runner\.(\w+)\(\)", worded):
        assert call in zr.__all__, worded  # a function the API has


@pytest.mark.parametrize(("text", "worded"), [
    ("see `zluda-run plan -- CMD` for the full reasons; --force runs it anyway",
     "see zluda_runner.plan_command() for the full reasons; Options(force=True) runs it anyway"),
    ("pass --zluda-dir the folder you unpacked", "pass Options(zluda_dir=...) the folder you unpacked"),
    ("fetch the release again (zluda-run fetch) or check --zluda-dir",
     "fetch the release again (zluda_runner.fetch()) or check Options(zluda_dir=...)"),
    ("compare it: zluda-run ab --b-python PY", "compare it: zluda_runner.run_ab()"),
    ("`zluda-run cache clean` again when it is done", "zluda_runner.clean_cache() again when it is done"),
    ("run `zluda-run --verify-load -- python x.py`", "run zluda_runner.verify_launch()"),
    ("see `zluda-run results list`", "see zluda_runner.list_results()"),
    ("or reinstall torch (pip install --force-reinstall --no-deps torch==X); then",
     "or reinstall torch (`pip install --force-reinstall --no-deps torch==X`); then"),
    ("usage: zluda-run [OPTIONS] -- COMMAND [ARGS]...",
     "give the command as a sequence of words, its program first"),
    ("install it with `--archive FILE`", "install it with Options(archive=...)"),
    ("without --strict zluda-run goes on", "without strict=True zluda-run goes on"),
])
def test_wording_examples(text: str, worded: str) -> None:
    assert for_caller(text) == worded


def test_the_command_line_reads_the_library_s_own_words(tmp_path: Path) -> None:
    """The CLI calls the API inside ``worded_for("command line")``: the same error keeps its flags there,
    and a Python caller (the default) reads Options fields."""
    def hint(options: zr.Options) -> str:
        try:
            zr.cache_path("no-such-release", options)
        except zr.ZludaRunnerError as exc:
            return exc.hint or ""
        raise AssertionError("no error")

    options = zr.Options(cache_dir=tmp_path)
    with worded_for("command line"):
        cli = hint(options)
    python = hint(options)
    assert "zluda-run" in cli and "zluda-run" not in python, (cli, python)
