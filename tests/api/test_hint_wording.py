"""Hints are neutral at the source and worded by each front end (issue 21): the library writes an option
as ``{opt:zluda_dir DIR}`` and an action as ``{cmd:doctor}`` (:mod:`zluda_runner.core.wording`); the
command line reads ``--zluda-dir DIR`` and `` `zluda-run doctor` ``, a Python caller
``Options(zluda_dir=...)`` and ``zluda_runner.run_doctor()``. Another program's command line
(``pip install --force-reinstall``) stays as it is."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import zluda_runner as zr
from zluda_runner.cli import main_group
from zluda_runner.commands import COMMAND_TABLE, load_command
from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.wording import COMMANDS, MARKUP, OPTIONS, command_key, option_key, render, worded_for

PACKAGE = Path(__file__).resolve().parents[2] / "zluda_runner"
FRONT_ENDS = ("commands", "api", "cli.py")
FLAG = re.compile(r"(?<![\w-])--[a-z]")
COMMAND_LINE = re.compile(r"\bzluda-run (?:-|" + "|".join(sorted({k.split()[0] for k in COMMANDS}))
                          + r")\b")
# other programs' command lines, written as they are typed (their flags are their own)
OTHER_PROGRAMS = re.compile(r"\b(?:pip|python -m pip|uv pip) install[^,;()`]*|\bsudo ldconfig\b"
                            r"|\b(?:docker|podman) run[^,;()`]*")


def _literal(node: ast.expr) -> str:
    return "".join(c.value for c in ast.walk(node)
                   if isinstance(c, ast.Constant) and isinstance(c.value, str))


def _error_texts() -> list[tuple[str, str]]:
    """(where, text) of each hint (``hint=``, or an error's second argument), each error message and
    each doctor check's message and fix, given outside the front ends, its literal parts joined."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in FRONT_ENDS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # a text kept in a module constant (NOT_ON_WINDOWS = "...") and given by its name
        constants = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign)
                     for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            texts: list[ast.expr] = []
            if isinstance(node, ast.keyword) and node.arg == "hint":
                texts.append(node.value)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id.endswith(("Error", "Fault")):
                texts += node.args[:2]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Check":
                # a doctor check: Check(id, status, message, fix, details); the API words both for the caller
                texts += node.args[2:4] + [k.value for k in node.keywords if k.arg in ("message", "fix")]
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "fix"
                                                      for t in node.targets):
                texts.append(node.value)  # a check's fix built before the Check(...)
            texts = [constants.get(t.id, t) if isinstance(t, ast.Name) else t for t in texts]
            found += [(f"{rel}:{t.lineno}", _literal(t)) for t in texts if _literal(t).strip()]
    return found


TEXTS = _error_texts()
MARKED = [(w, t) for w, t in TEXTS if MARKUP.search(t)]


def test_the_library_words_its_hints_in_markup() -> None:
    """What this file checks exists (issue 21 counted 74+ hint lines naming flags)."""
    assert len(MARKED) > 70


def _markup_faults(where: str, text: str) -> list[str]:
    """What is wrong with one text's wording: a bare flag or command line outside the markup, or
    malformed markup."""
    plain = OTHER_PROGRAMS.sub("", MARKUP.sub("", text))
    faults = []
    if FLAG.search(plain):
        faults.append(f"{where}: a bare flag in {text!r}")
    if COMMAND_LINE.search(plain):
        faults.append(f"{where}: a bare command line in {text!r}")
    if re.search(r"\{(?:opt|cmd):", plain):
        faults.append(f"{where}: malformed markup in {text!r}")
    return faults


def _token_faults(where: str, text: str) -> list[str]:
    """Each markup token of one text that a front end does not know or leaves unrendered."""
    faults = []
    for match in MARKUP.finditer(text):
        kind, body = match.group(1), match.group(2)
        try:
            if kind == "opt":
                option_key(body)
            elif kind == "cmd":
                command_key(body)
        except KeyError as exc:
            faults.append(f"{where}: {match.group(0)} unknown ({exc})")
            continue
        faults += [f"{where}: {match.group(0)} left unrendered for the {reader} reader"
                   for reader in ("python", "command line")
                   if match.group(0) in render(match.group(0), reader)]
    return faults


def test_no_bare_flag_or_command_line_outside_the_markup() -> None:
    """One test over every text (it was one case per text: 933 of the suite's cases), naming each fault."""
    faults = [f for where, text in TEXTS for f in _markup_faults(where, text)]
    assert not faults, "\n".join(faults)


def test_every_token_is_known_to_both_front_ends() -> None:
    faults = [f for where, text in MARKED for f in _token_faults(where, text)]
    assert not faults, "\n".join(faults)


def test_the_wording_checks_find_what_they_look_for() -> None:
    """The two checks above are not vacuous: each fault they exist for is found."""
    assert _markup_faults("x", "run with --zluda-dir DIR")
    assert _markup_faults("x", "run `zluda-run doctor` first")
    assert _markup_faults("x", "{opt:zluda_dir DIR")
    assert not _markup_faults("x", "run {cmd:doctor} with {opt:zluda_dir DIR}; pip install --user x")
    assert _token_faults("x", "{opt:no_such_option_at_all}")
    assert not _token_faults("x", "{opt:zluda_dir DIR}")


def _cli_params() -> dict[str, set[str]]:
    """Each command's words -> the flags it takes (the group's own under "")."""
    found: dict[str, set[str]] = {"": {o for p in main_group.params
                                       for o in (*p.opts, *p.secondary_opts)}}
    for name in COMMAND_TABLE:
        command = load_command(name)
        assert command is not None, name
        subs = command.commands.items() if isinstance(command, click.Group) else [("", command)]
        for sub, cmd in subs:
            found[f"{name} {sub}".strip()] = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
    return found


def test_the_command_line_has_every_flag_and_command() -> None:
    params = _cli_params()
    every_flag = set().union(*params.values())
    for name, (flag, _call, _quoted) in OPTIONS.items():
        assert flag in every_flag, name
    for words in COMMANDS:
        command = " ".join(w for w in words.split() if not w.startswith("-"))
        assert command in params, words
        assert all(w in params[command] | params[""] for w in words.split() if w.startswith("-")), words


def test_the_api_has_every_function_and_keyword() -> None:
    fields = {f.name for f in dataclasses.fields(zr.Options)}
    keywords = {p for name in zr.__all__ if inspect.isfunction(getattr(zr, name))
                for p in inspect.signature(getattr(zr, name)).parameters}
    for function in COMMANDS.values():
        assert function in zr.__all__, function
    for name, (_flag, call, _quoted) in OPTIONS.items():
        field = re.fullmatch(r"Options\((\w+)=.*\)", call)
        keyword = re.fullmatch(r"(\w+)=.*", call)
        traced = re.fullmatch(r"(\w+)\((\w+)=\.\.\.\)", call)
        if field:
            assert field.group(1) in fields, name
        elif keyword:
            assert keyword.group(1) in keywords, name
        elif call in keywords:  # an argument given by position: place(torch_lib, ...)
            pass
        elif traced:
            assert traced.group(2) in inspect.signature(getattr(zr, traced.group(1))).parameters, name
        else:
            assert name == "html", name  # the command line's HTML page: no call of the API takes it


@pytest.mark.parametrize(("text", "cli", "python"), [
    ("see {cmd:plan -- CMD} for the full reasons; {opt:force} runs it anyway",
     "see `zluda-run plan -- CMD` for the full reasons; --force runs it anyway",
     "see zluda_runner.plan_command() for the full reasons; Options(force=True) runs it anyway"),
    ("pass {opt:zluda_dir} the folder you unpacked", "pass --zluda-dir the folder you unpacked",
     "pass Options(zluda_dir=...) the folder you unpacked"),
    ("fetch the release again ({cmd:fetch}) or check {opt:zluda_dir}",
     "fetch the release again (`zluda-run fetch`) or check --zluda-dir",
     "fetch the release again (zluda_runner.fetch()) or check Options(zluda_dir=...)"),
    ("compare it: {cmd:ab --b-python PY}", "compare it: `zluda-run ab --b-python PY`",
     "compare it: zluda_runner.run_ab()"),
    ("{cmd:cache clean} again when it is done", "`zluda-run cache clean` again when it is done",
     "zluda_runner.clean_cache() again when it is done"),
    ("run {cmd:--verify-load -- python x.py}", "run `zluda-run --verify-load -- python x.py`",
     "run zluda_runner.verify_launch()"),
    ("see {cmd:results list}", "see `zluda-run results list`", "see zluda_runner.list_results()"),
    ("or reinstall torch (pip install --force-reinstall --no-deps torch==X); then",
     "or reinstall torch (pip install --force-reinstall --no-deps torch==X); then",
     "or reinstall torch (pip install --force-reinstall --no-deps torch==X); then"),
    ("{usage}", "usage: zluda-run [OPTIONS] -- COMMAND [ARGS]...",
     "give the command as a sequence of words, its program first"),
    ("install it with {opt:archive FILE}", "install it with --archive FILE",
     "install it with Options(archive=...)"),
    ("without {opt:strict} zluda-run goes on", "without --strict zluda-run goes on",
     "without strict=True zluda-run goes on"),
    ("e.g. {opt:hip 6.2}, {opt:runs 3}", "e.g. --hip 6.2, --runs 3", 'e.g. hip="6.2", runs=3'),
    ("{opt:no_record}", "--no-record", "Options(record=False)"),
    ("{opt:nonesuch} stays", "{opt:nonesuch} stays", "{opt:nonesuch} stays"),
])
def test_rendering_examples(text: str, cli: str, python: str) -> None:
    assert render(text, "command line") == cli
    assert render(text, "python") == python
    assert render(text) == python  # a Python caller unless a front end says otherwise
    with worded_for("command line"):
        assert render(text) == cli


def test_an_error_reads_for_its_front_end() -> None:
    exc = ZludaRunnerError("{opt:runs} must be at least 1", hint="use {opt:runs 3} or more")
    assert (exc.message, exc.hint) == ("runs=... must be at least 1", "use runs=3 or more")
    assert str(exc) == "runs=... must be at least 1\nhint: use runs=3 or more"
    assert (exc.message_for("command line"), exc.hint_for("command line")) == (
        "--runs must be at least 1", "use --runs 3 or more")
    assert (exc.raw_message, exc.raw_hint) == ("{opt:runs} must be at least 1", "use {opt:runs 3} or more")
    with worded_for("command line"):
        assert str(exc) == "--runs must be at least 1\nhint: use --runs 3 or more"


def test_a_python_caller_reads_options_and_functions(tmp_path: Path) -> None:
    with pytest.raises(zr.ZludaRunnerError) as info:
        zr.cache_path("no-such-release", zr.Options(cache_dir=tmp_path))
    hint = info.value.hint or ""
    assert "zluda_runner." in hint and "zluda-run" not in hint and not FLAG.search(hint), hint


@pytest.mark.parametrize("as_json", [False, True])
def test_the_command_line_shows_its_flags(tmp_path: Path, as_json: bool) -> None:
    """The same error through ``zluda-run`` (plain and ``--json``): the hint names the command line."""
    json_flag = ["--json"] if as_json else []
    args = ["--cache-dir", str(tmp_path), *json_flag, "cache", "path", "no-such-release"]
    out = CliRunner().invoke(main_group, args)
    assert out.exit_code != 0, out.output
    if as_json:
        hint = json.loads(out.stdout)["hint"]
    else:
        hint = next(line for line in out.stderr.splitlines() if line.startswith("hint: "))
    assert "`zluda-run " in hint and "zluda_runner." not in hint and "{" not in hint, hint
