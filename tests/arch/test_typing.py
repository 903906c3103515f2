"""The package is checked by ``mypy --strict`` (CI runs ``mypy zluda_runner``, which reads pyproject's
``[tool.mypy]``): the setting cannot be dropped silently, and the only modules it relaxes are the two
probe scripts that run inside the target interpreter. Everything that runs there (those scripts and the
modules they load by path from beside them) imports nothing from zluda_runner."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli before 3.11
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
TARGET_SCRIPTS = {"zluda_runner.probe.torch_ops", "zluda_runner.probe.torch_opinfo"}  # relaxed (untyped)
# loaded by path inside the target interpreter by those scripts (their ``_beside(name)``); the package
# imports them as well, so they stay strict
TARGET_BESIDE = {"zluda_runner.probe.output_compare", "zluda_runner.probe.target_side"}
TARGET_SIDE = TARGET_SCRIPTS | TARGET_BESIDE
STRICT_FLAGS = {"strict", "disallow_untyped_defs", "disallow_incomplete_defs", "disallow_untyped_calls",
                "check_untyped_defs", "warn_return_any", "ignore_errors", "disallow_any_generics"}


def _mypy_config() -> dict[str, Any]:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    config: dict[str, Any] = pyproject["tool"]["mypy"]
    return config


def test_mypy_is_strict_over_the_package() -> None:
    config = _mypy_config()
    assert config.get("strict") is True
    assert "zluda_runner" in config.get("files", [])
    assert not config.get("exclude"), "nothing of the package is left out of mypy"


def test_only_the_target_interpreter_scripts_are_relaxed() -> None:
    relaxed: set[str] = set()
    for override in _mypy_config().get("overrides", []):
        flags = STRICT_FLAGS & set(override)
        if any(override[k] is not True for k in flags):
            modules = override["module"]
            relaxed.update([modules] if isinstance(modules, str) else modules)
        assert not override.get("ignore_errors"), f"errors are ignored in {override['module']}"
    assert relaxed == TARGET_SCRIPTS


def test_every_module_the_target_scripts_load_beside_them_is_listed() -> None:
    loaded: set[str] = set()
    for module in sorted(TARGET_SCRIPTS):
        tree = ast.parse((REPO / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_beside":
                arg = node.args[0]
                assert isinstance(arg, ast.Constant) and isinstance(arg.value, str), ast.dump(node)
                loaded.add(f"zluda_runner.probe.{arg.value}")
    assert loaded == TARGET_BESIDE


def test_the_target_side_code_really_stands_alone() -> None:
    """It runs as ``python torch_ops.py`` in the workload's interpreter (and what that loads from beside
    it): only torch and the standard library, never zluda_runner (which that interpreter does not have)."""
    for module in sorted(TARGET_SIDE):
        path = REPO / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        roots: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path.name}: relative import"
                roots.add((node.module or "").split(".")[0])
        foreign = {r for r in roots if r not in sys.stdlib_module_names and r != "torch"}
        assert not foreign, f"{path.name} imports {sorted(foreign)}"
