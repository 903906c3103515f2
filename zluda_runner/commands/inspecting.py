"""``zluda-run inspect``: what a CUDA build needs, under which names, found where."""

from __future__ import annotations

from pathlib import Path

import click

from zluda_runner.api.launching import inspect
from zluda_runner.commands import command
from zluda_runner.commands.common import GivenPath, Invocation, emit_json, pass_invocation
from zluda_runner.report.target_view import print_profile


@command("inspect")
@click.argument("path", required=False, type=GivenPath())
@pass_invocation
def inspect_command(call: Invocation, path: Path | None) -> None:
    """\b
    PATH may be a torch folder, a site-packages folder or one ELF/PE binary;
    without PATH the torch of --python (default: this interpreter) is inspected.
    """
    if path is not None and call.options.python:
        raise click.UsageError("give either PATH or --python, not both")
    profile = inspect(path, call.options)
    emit_json(profile) if call.json else print_profile(profile)


COMMANDS: list[click.Command] = [inspect_command]
