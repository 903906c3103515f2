"""``zluda-run inspect``: what a CUDA build needs, under which names, found where."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings
from zluda_runner.core.settings import Settings
from zluda_runner.inspection.inspect import inspect_path, inspect_python
from zluda_runner.report.target_view import print_profile


@click.command("inspect")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@pass_settings
def inspect_command(settings: Settings, path: Path | None) -> None:
    """What does this CUDA build need, under which names, and where would the loader find it?

    \b
    PATH may be a torch folder, a site-packages folder or one ELF/PE binary;
    without PATH the torch of --python (default: this interpreter) is inspected.
    """
    if path is not None and settings.python:
        raise click.UsageError("give either PATH or --python, not both")
    if path is not None:
        profile = inspect_path(path, cache_dir=settings.cache_dir)
    else:
        profile = inspect_python(settings.python or sys.executable, cache_dir=settings.cache_dir)
    emit_json(profile) if settings.json else print_profile(profile)


COMMANDS: list[click.Command] = [inspect_command]
