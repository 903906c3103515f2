"""place / restore / status: Windows DLL placement in torch/lib, undone exactly, drift and quarantine found.

Usable from any host against a Windows ``torch/lib`` (``--torch-lib DIR``): a wheel, a mounted
drive, a test fixture.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click

from zluda_runner.api.placing import FORCE_CHANGES_NOTHING, place, placement_status, restore
from zluda_runner.commands import command
from zluda_runner.commands.common import GivenPath, Invocation, emit_json, pass_invocation, warn
from zluda_runner.core import exitcodes
from zluda_runner.report.placement_view import render_placement, render_restore, render_status
from zluda_runner.report.plan_view import print_plan
from zluda_runner.report.terminal import say

_torch_lib = click.option("--torch-lib", type=GivenPath(), metavar="DIR",
                          help="The torch/lib folder (default: the target interpreter's).")


@command("place")
@click.option("--torch-lib", type=GivenPath(), metavar="DIR", required=True,
              help="The Windows torch/lib folder to place into.")
@click.option("--dry-run", is_flag=True, help="Only show the plan for that folder.")
@click.option("--force", "force_opt", is_flag=True, help="Place even when a verdict is fatal.")
@pass_invocation
def place_command(call: Invocation, torch_lib: Path, dry_run: bool, force_opt: bool) -> None:
    options = dataclasses.replace(call.options, force=True) if force_opt else call.options
    done = place(torch_lib, options, dry_run=dry_run)
    if dry_run:
        emit_json(done.plan) if call.json else print_plan(done.plan)
        sys.exit(exitcodes.CHECK_FAILED if done.plan.fatal else exitcodes.OK)
    if call.json:
        emit_json({"plan": done.plan.to_dict(), "placement": done.result.to_dict() if done.result else None,
                   "defaults_hook": str(done.defaults_hook) if done.defaults_hook else None})
        return
    for line in done.warnings:
        click.echo(f"warning: {line}", err=True)
    say([render_placement(done.result, done.defaults_hook)])


@command("restore")
@_torch_lib
@click.option("--force", "force_opt", is_flag=True, hidden=True)  # deprecated: FORCE_CHANGES_NOTHING
@pass_invocation
def restore_command(call: Invocation, torch_lib: Path | None, force_opt: bool) -> None:
    """Exit 0 once nothing of zluda-run's is left placed: each file it placed has its original back; a
    file another program wrote since (pip upgraded torch) is kept as it is (listed in ``kept``)."""
    if force_opt:
        warn(f"restore --force {FORCE_CHANGES_NOTHING}")
    result = restore(torch_lib, call.options)
    emit_json(result) if call.json else say([render_restore(result)])


@command("status")
@_torch_lib
@click.option("--deep", is_flag=True, help="Hash every file instead of trusting size, time and inode.")
@pass_invocation
def status_command(call: Invocation, torch_lib: Path | None, deep: bool) -> None:
    st = placement_status(torch_lib, call.options, deep=deep)
    emit_json(st) if call.json else say([render_status(st)])
    sys.exit(exitcodes.CHECK_FAILED if st.needs_replace and st.state != "none" else exitcodes.OK)


COMMANDS: list[click.Command] = [place_command, restore_command, status_command]
