"""The CLI calls only the public API (issue 21): ``zluda_runner/cli.py`` and every module of
``zluda_runner/commands/`` import, of this package, only the API (``zluda_runner.api*``), the views
(``zluda_runner.report*``), each other (``zluda_runner.commands*``) and the few core helpers below.
Every import counts: at the top, inside a function, under ``TYPE_CHECKING``."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "zluda_runner"

ALLOWED_TREES = ("zluda_runner.api", "zluda_runner.report", "zluda_runner.commands")
# The package's own modules a front end may use besides the API, each for one reason:
ALLOWED_MODULES = {
    "zluda_runner.core.version": "__version__ (--version) and JSON_SCHEMA_VERSION (--json's schema)",
    "zluda_runner.core.errors": "the exceptions the CLI prints as error:/hint: (and UsageFault for --json)",
    "zluda_runner.core.exitcodes": "the exit codes a command exits with",
    "zluda_runner.core.envnames": "the environment variables an option reads (CACHE_ENV, MANIFEST_ENV, ...)",
    "zluda_runner.core.textio": "the CLI's own stdout/stderr made safe (a cp1252 pipe on Windows)",
    "zluda_runner.core.serial": "--json: records to plain JSON values",
    "zluda_runner.core.arch": "refusing a non-x86-64 machine before a workload's words are parsed",
    "zluda_runner.core.argcheck": "the API's bounds of a number (Seconds), held by the options' click types",
    # the launch memo (commands/launchmemo): a plain launch remembered, and replayed without the API
    "zluda_runner.core.observe": "the launch memo: the derivation's observations recorded, and made again",
    "zluda_runner.core.become": "the launch memo: the exec it hears and remembers, and the one it replays",
    "zluda_runner.core.places": "the launch memo: where it lives in the cache, without pathlib",
    "zluda_runner.core.fileread": "the launch memo: read bounded",
    "zluda_runner.core.fsutil": "the launch memo: written atomically",
    "zluda_runner.core.termsize": "the terminal's width `zluda-run --help` is laid out to (no shutil)",
    "zluda_runner.core.startstate": "the command line's start: a target that is this interpreter is asked "
                                    "in-process",
}


def _allowed(module: str) -> bool:
    return module in ALLOWED_MODULES or any(module == t or module.startswith(t + ".") for t in ALLOWED_TREES)


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def forbidden_imports(source: str) -> list[str]:
    """The package modules ``source`` imports that a front-end module may not."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names
                      if a.name.split(".")[0] == "zluda_runner" and not _allowed(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.append(f"relative import (level {node.level}) of {node.module}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "zluda_runner":
            for alias in node.names:  # `from zluda_runner.core import exitcodes` imports a module
                inner = f"{node.module}.{alias.name}"
                name = inner if _is_module(inner) else node.module
                if not _allowed(name):
                    found.append(name)
    return found


def _front_end_modules() -> list[Path]:
    return [PACKAGE / "cli.py", *sorted((PACKAGE / "commands").glob("*.py"))]


def test_the_cli_imports_only_the_api_the_views_and_core_helpers() -> None:
    offenders = {str(p.relative_to(PACKAGE.parent)): bad for p in _front_end_modules()
                 if (bad := forbidden_imports(p.read_text(encoding="utf-8")))}
    assert not offenders, offenders


def test_every_command_module_is_checked() -> None:
    names = {p.stem for p in _front_end_modules()}
    assert {"cli", "common", "launching", "fetching", "results"} <= names


def test_the_check_sees_a_stage_import() -> None:
    """It can fail: a stage imported at the top, in a function, by package, or under TYPE_CHECKING."""
    assert forbidden_imports("from zluda_runner.launch.run import start") == ["zluda_runner.launch.run"]
    assert forbidden_imports("def f():\n    import zluda_runner.release.obtain\n") == [
        "zluda_runner.release.obtain"]
    assert forbidden_imports("from zluda_runner.core import settings, exitcodes") == [
        "zluda_runner.core.settings"]
    assert forbidden_imports("if TYPE_CHECKING:\n    from zluda_runner.plan.model import ShimPlan\n") == [
        "zluda_runner.plan.model"]
    assert sorted(forbidden_imports("from zluda_runner import launch, __version__")) == [
        "zluda_runner", "zluda_runner.launch"]  # the root too: no module imports it
    assert forbidden_imports("from zluda_runner.api import run\nfrom zluda_runner.report import ab_view\n"
                             "from zluda_runner.core.version import __version__\nimport click\n") == []
