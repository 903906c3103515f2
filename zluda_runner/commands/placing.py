"""place / restore / status: Windows DLL placement in torch/lib, undone exactly, drift and quarantine found.

Usable from any host against a Windows ``torch/lib`` (``--torch-lib DIR``): a wheel, a mounted
drive, a test fixture.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings
from zluda_runner.core import exitcodes
from zluda_runner.core.settings import Settings
from zluda_runner.launch.prepare import refuse_if_fatal
from zluda_runner.launch.windows import (
    place,
    placements_of,
    plan_for_torch_lib,
    restore,
    status,
    torch_lib_for,
)
from zluda_runner.report.placement_view import render_placement, render_restore, render_status
from zluda_runner.report.plan_view import print_plan

_torch_lib = click.option("--torch-lib", metavar="DIR",
                          help="The torch/lib folder (default: the target interpreter's).")


@click.command("place")
@click.option("--torch-lib", metavar="DIR", required=True, help="The Windows torch/lib folder to place into.")
@click.option("--dry-run", is_flag=True, help="Only show the plan for that folder.")
@click.option("--force", "force_opt", is_flag=True, help="Place even when a verdict is fatal.")
@pass_settings
def place_command(settings: Settings, torch_lib: str, dry_run: bool, force_opt: bool) -> None:
    """Plan for a Windows torch/lib folder and place ZLUDA's DLLs there (journaled; `restore` undoes)."""
    plan = plan_for_torch_lib(Path(torch_lib), settings)
    if dry_run:
        emit_json(plan) if settings.json else print_plan(plan)
        sys.exit(exitcodes.CHECK_FAILED if plan.fatal else exitcodes.OK)
    refuse_if_fatal(plan, force_opt or settings.force)
    result = place(Path(torch_lib), placements_of(plan)) if plan.placements else None
    if settings.json:
        emit_json({"plan": plan.to_dict(), "placement": result.to_dict() if result else None})
        return
    for line in result.warnings if result else []:
        click.echo(f"warning: {line}", err=True)
    click.echo(render_placement(result))


@click.command("restore")
@_torch_lib
@click.option("--force", "force_opt", is_flag=True, help="Also put back files changed since placement.")
@pass_settings
def restore_command(settings: Settings, torch_lib: str | None, force_opt: bool) -> None:
    """Put back exactly the DLLs that were in torch/lib before zluda-run placed ZLUDA's.

    Exit 0 when everything is back; 3 when a file changed since placement was left alone
    (the journal and saved originals are kept: `restore --force` finishes)."""
    force = force_opt or settings.force  # one --force: `zluda-run --force restore` forces too
    result = restore(torch_lib_for(settings, torch_lib), force=force, cache_dir=settings.cache_dir)
    emit_json(result) if settings.json else click.echo(render_restore(result))
    sys.exit(exitcodes.OK if result.complete else exitcodes.CHECK_FAILED)


@click.command("status")
@_torch_lib
@click.option("--deep", is_flag=True, help="Hash every file instead of trusting size, time and inode.")
@pass_settings
def status_command(settings: Settings, torch_lib: str | None, deep: bool) -> None:
    """Is ZLUDA still placed in torch/lib, or did something (pip, antivirus) undo it? Exit 3 on drift."""
    st = status(torch_lib_for(settings, torch_lib), deep=deep)
    emit_json(st) if settings.json else click.echo(render_status(st))
    sys.exit(exitcodes.CHECK_FAILED if st.needs_replace and st.state != "none" else exitcodes.OK)


COMMANDS: list[click.Command] = [place_command, restore_command, status_command]
