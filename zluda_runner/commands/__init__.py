"""CLI commands, one module per area, each exporting ``COMMANDS``; imported on first use (a cached
``zluda-run python infer.py`` must not pay for requests, pyelftools or the probe suite), so
``COMMAND_MODULES`` is the authority on which first word is a command (tests/plan/test_cli.py)."""

from __future__ import annotations

import importlib
from types import ModuleType

import click

# command name -> module in this package that defines it.
COMMAND_MODULES: dict[str, str] = {
    "releases": "releases",
    "manifest": "releases",
    "fetch": "fetching",
    "cache": "fetching",
    "inspect": "inspecting",
    "run": "launching",
    "plan": "launching",
    "place": "placing",
    "restore": "placing",
    "status": "placing",
    "probe": "probing",
    "trace-report": "probing",
    "doctor": "hosting",
    "warmup": "hosting",
    "ab": "hosting",
    "poc": "poc",
    "results": "results",
}


def load_module(name: str) -> ModuleType:
    return importlib.import_module(f".{name}", __name__)


def load_command(name: str) -> click.Command | None:
    """The command called ``name``, importing only the module that defines it."""
    module_name = COMMAND_MODULES.get(name)
    if module_name is None:
        return None
    return next((c for c in load_module(module_name).COMMANDS if c.name == name), None)
