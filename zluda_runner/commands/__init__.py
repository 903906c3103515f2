"""CLI commands, one module per area, each exporting ``COMMANDS``; imported on first use (a cached
``zluda-run python infer.py`` must not pay for requests, pyelftools or the probe suite), so
``COMMAND_TABLE`` is the authority on which first word is a command and the only home of its one-line
help: :func:`command` and :func:`group` make each command's help from it. Importing this package imports
neither click nor a command (the fast recogniser of a plain launch, :mod:`zluda_runner.commands.fast`, reads
the table without click)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

    import click

# command name -> (module in this package that defines it, the command's one-line help: the first
# paragraph of its help, one sentence). `zluda-run --help` lists the commands from here, importing none.
COMMAND_TABLE: dict[str, tuple[str, str]] = {
    "releases": ("releases", "Pick the release for this host's HIP and this (--python) torch as run does; "
                             "exit 3 if nothing fits."),
    "manifest": ("releases", "The release manifest: keep it current without a new package."),
    "fetch": ("fetching", "Download, verify and unpack a ZLUDA release into the cache; print its folder."),
    "cache": ("fetching", "Inspect or clean the cache of downloaded and unpacked releases."),
    "inspect": ("inspecting", "What does this CUDA build need, under which names, and where would the loader "
                              "find it?"),
    "run": ("launching", "Run COMMAND under ZLUDA (`zluda-run python infer.py` is the same)."),
    "plan": ("launching", "Show what `zluda-run -- COMMAND` would do, and whether each library will bind (no "
                          "download)."),
    "place": ("placing", "Plan for a Windows torch/lib folder and place ZLUDA's DLLs there (journaled; "
                         "`restore` undoes)."),
    "restore": ("placing", "Put back exactly the DLLs that were in torch/lib before zluda-run placed "
                           "ZLUDA's."),
    "status": ("placing", "Is ZLUDA still placed in torch/lib, or did something (pip, antivirus) undo it? "
                          "Exit 3 on drift."),
    "probe": ("probing", "Which CUDA calls (or torch ops) work here? Pass / fail / missing / crashed per "
                         "case."),
    "trace-report": ("probing", "Show a saved trace (JSON from --trace-out, or a folder of raw trace "
                                "files)."),
    "doctor": ("hosting", "Check this machine for ZLUDA: GPU, HIP/ROCm, driver, libraries, torch, releases, "
                          "caches."),
    "warmup": ("hosting", "Run COMMAND once under ZLUDA to fill its compile cache (first runs compile for "
                          "minutes)."),
    "ab": ("hosting", "Compare SCRIPT under ZLUDA (A) with native ROCm (B), or any two commands."),
    "poc": ("poc", "Does it really run? Run COMMAND N times through ZLUDA with GPU telemetry and judge it."),
    "find": ("find", "Search for a ZLUDA release and settings that run COMMAND, judged as poc judges; lock "
                     "the one that works."),
    "results": ("results", "Recorded runs: list, compare, matrix, share (--results-db, "
                           "ZLUDA_RUNNER_RESULTS_DB, or the cache)."),
}

# the commands whose output is a function of what they observe, remembered per command line and replayed
# while nothing observed changed (:mod:`zluda_runner.commands.commandmemo`)
REMEMBERED_COMMANDS = frozenset({"releases"})


def load_module(name: str) -> ModuleType:
    import importlib

    return importlib.import_module(f".{name}", __name__)


def load_command(name: str) -> click.Command | None:
    """The command called ``name``, importing only the module that defines it."""
    entry = COMMAND_TABLE.get(name)
    if entry is None:
        return None
    return next((c for c in load_module(entry[0]).COMMANDS if c.name == name), None)


def _help(name: str, more: str | None = None) -> str:
    """The help of command NAME: the table's line, then MORE (a docstring)."""
    import inspect

    return f"{COMMAND_TABLE[name][1]}\n\n{inspect.cleandoc(more or '')}".rstrip()


def command(
        name: str, settings: dict[str, Any] | None = None) -> Callable[[Callable[..., Any]], click.Command]:
    """``click.command(NAME, context_settings=SETTINGS)``, its help the table's line, then the docstring."""
    import click

    return lambda f: click.command(name, help=_help(name, f.__doc__), context_settings=settings)(f)


def group(name: str, more: str | None = None) -> click.Group:
    """The command group NAME, its help the table's line followed by MORE."""
    import click

    return click.Group(name, help=_help(name, more))
