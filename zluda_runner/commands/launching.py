"""run / plan / restore / status commands."""

from __future__ import annotations

import click

from ..errors import LaunchError
from ..settings import Settings
from .common import pass_settings


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@pass_settings
def run_command(settings: Settings, command: tuple[str, ...]) -> None:
    """Run COMMAND under ZLUDA (``zluda-run python infer.py`` is the same)."""
    raise LaunchError(
        f"launching {command[0]!r} is not available yet",
        hint="use `zluda-run inspect` and `zluda-run releases` meanwhile",
    )


COMMANDS: list[click.Command] = [run_command]
