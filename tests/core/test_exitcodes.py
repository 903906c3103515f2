"""One exit-code table (core/exitcodes.py): every error's exit code is one of its rows, named there."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import zluda_runner
from zluda_runner.core import errors, exitcodes


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_every_error_exits_with_a_code_of_the_table() -> None:
    for info in pkgutil.walk_packages(zluda_runner.__path__, "zluda_runner."):
        if info.name.rsplit(".", 1)[-1] in ("torch_ops", "torch_opinfo", "__main__"):
            continue  # scripts for the target interpreter; the CLI entry point
        importlib.import_module(info.name)
    table = {code for code, _ in exitcodes.TABLE}
    codes = {cls.__qualname__: cls.exit_code for cls in _subclasses(errors.ZludaRunnerError)}
    assert codes["CheckFailedError"] == exitcodes.CHECK_FAILED and codes["CommandNotFoundError"] == 127
    assert {name: code for name, code in codes.items() if code not in table} == {}
    assert errors.UsageFault("x").exit_code == exitcodes.USAGE


def test_errors_name_the_codes_instead_of_repeating_numbers() -> None:
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    literal = [node.lineno for node in ast.walk(tree)
               if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
               and any(getattr(t, "id", getattr(t, "attr", "")) == "exit_code" for t in node.targets)]
    defaults = [d.lineno for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                for d in f.args.kw_defaults if isinstance(d, ast.Constant) and isinstance(d.value, int)]
    assert literal == [] and defaults == []
