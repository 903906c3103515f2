"""CLI commands, one module per area; each module exports ``COMMANDS``.

Modules are imported on demand: ``zluda-run python infer.py`` with a cached
plan must not pay for importing requests, pyelftools or the probe suite
(benchmarks/launch_overhead.py). ``COMMAND_MODULES`` is therefore the
authority on which first word is one of our commands; a module that adds a
command must list it here (tests/plan/test_cli.py checks the table against every module).
"""

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
    "results": "results",
}


def load_module(name: str) -> ModuleType:
    module = importlib.import_module(f".{name}", __name__)
    if name == "fetching" and not getattr(module, "_compile_cache_wired", False):
        # `zluda-run cache compile`: ZLUDA's own compile cache, next to our download cache.
        hosting = importlib.import_module(".hosting", __name__)
        module.cache_group.add_command(hosting.compile_cache_command)
        module._compile_cache_wired = True  # type: ignore[attr-defined]
    return module


def load_command(name: str) -> click.Command | None:
    """The command called ``name``, importing only the module that defines it."""
    module_name = COMMAND_MODULES.get(name)
    if module_name is None:
        return None
    return next((c for c in load_module(module_name).COMMANDS if c.name == name), None)
