"""``zluda-run inspect``: what a CUDA build needs, under which names, found where."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.settings import Settings
from zluda_runner.report.target_view import print_profile
from zluda_runner.target.inspect import inspect_path, inspect_python


@click.command("inspect")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--python", "python", metavar="PY", help="Inspect the torch of this interpreter.")
@click.option("--json", "as_json", is_flag=True, help="Print the TargetProfile as JSON.")
@pass_settings
def inspect_command(settings: Settings, path: Path | None, python: str | None, as_json: bool) -> None:
    """What does this CUDA build need, under which names, and where would the loader find it?

    \b
    PATH may be a torch folder, a site-packages folder or one ELF/PE binary;
    without PATH the torch of --python (default: this interpreter) is inspected.
    """
    python = python or settings.python
    if path is not None and python:
        raise click.UsageError("give either PATH or --python, not both")
    cache_dir = settings.cache_dir
    if path is not None:
        profile = inspect_path(path, cache_dir=cache_dir)
    else:
        profile = inspect_python(python or sys.executable, cache_dir=cache_dir)
    if want_json(settings, as_json):
        emit_json(profile)
    else:
        print_profile(profile)


COMMANDS: list[click.Command] = [inspect_command]
