"""place / restore / status: Windows DLL placement in torch/lib, undone exactly, drift and quarantine found.

Usable from any host against a Windows ``torch/lib`` (``--torch-lib DIR``): a wheel, a mounted
drive, a test fixture.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core import exitcodes
from zluda_runner.core.settings import Settings


def _torch_lib_option(func):
    return click.option(
        "--torch-lib", metavar="DIR", help="The torch/lib folder (default: the target interpreter's)."
    )(func)


def _resolve_torch_lib(settings: Settings, torch_lib: str | None) -> Path:
    if torch_lib:
        return Path(torch_lib)
    from zluda_runner.core.errors import PlacementError
    from zluda_runner.target.interpreter import probe_interpreter

    facts = probe_interpreter(settings.python or sys.executable, env=dict(os.environ))
    if not facts.torch_path:
        raise PlacementError(
            f"no torch in {facts.executable}: nothing placed there to check",
            hint="pass --torch-lib DIR or --python PY",
        )
    return Path(facts.torch_path) / "lib"


@click.command("place")
@click.option("--torch-lib", metavar="DIR", required=True, help="The Windows torch/lib folder to place into.")
@click.option("--dry-run", is_flag=True, help="Only show the plan for that folder.")
@click.option("--force", "force_opt", is_flag=True, help="Place even when a verdict is fatal.")
@click.option("--json", "json_flag", is_flag=True)
@pass_settings
def place_command(
    settings: Settings, torch_lib: str, dry_run: bool, force_opt: bool, json_flag: bool
) -> None:
    """Plan for a Windows torch/lib folder and place ZLUDA's DLLs there (journaled; `restore` undoes)."""
    from zluda_runner.launch.prepare import refuse_if_fatal
    from zluda_runner.launch.windows import place, placements_of, plan_for_torch_lib

    plan = plan_for_torch_lib(Path(torch_lib), settings)
    if dry_run:
        if want_json(settings, json_flag):
            emit_json(plan)
        else:
            from zluda_runner.report.plan_view import print_plan

            print_plan(plan)
        sys.exit(exitcodes.CHECK_FAILED if plan.fatal else exitcodes.OK)
    refuse_if_fatal(plan, force_opt or settings.force)
    result = place(Path(torch_lib), placements_of(plan)) if plan.placements else None
    if want_json(settings, json_flag):
        emit_json({"plan": plan.to_dict(), "placement": result.to_dict() if result else None})
        return
    if result is None:
        click.echo("nothing to place: this plan loads ZLUDA by preload or injector (see `--dry-run`)")
        return
    for line in result.warnings:
        click.echo(f"warning: {line}", err=True)
    if result.already_placed:
        click.echo(f"already placed in {result.torch_lib}")
    for name in result.placed:
        click.echo(f"placed   {name}")


@click.command("restore")
@_torch_lib_option
@click.option("--force", "force_opt", is_flag=True, help="Also put back files changed since placement.")
@click.option("--json", "json_flag", is_flag=True)
@pass_settings
def restore_command(settings: Settings, torch_lib: str | None, force_opt: bool, json_flag: bool) -> None:
    """Put back exactly the DLLs that were in torch/lib before zluda-run placed ZLUDA's.

    Exit 0 when everything is back; 3 when a file changed since placement was left alone
    (the journal and saved originals are kept: `restore --force` finishes)."""
    from zluda_runner.launch.windows import restore

    result = restore(_resolve_torch_lib(settings, torch_lib), force=force_opt)
    code = exitcodes.OK if result.complete else exitcodes.CHECK_FAILED
    if want_json(settings, json_flag):
        emit_json(result)
        sys.exit(code)
    for name in result.restored:
        click.echo(f"restored {name}")
    for name in result.removed:
        click.echo(f"removed  {name} (was not there before)")
    for name in result.skipped:
        click.echo(f"skipped  {name} (changed since placement; `zluda-run restore --force` puts the "
                   "original back)")
    for name in result.temp_files_removed:
        click.echo(f"removed  {name} (left by an interrupted placement)")
    if result.journal_kept:
        click.echo(f"the journal and saved originals are kept in {result.journal_kept.parent}")
    sys.exit(code)


@click.command("status")
@_torch_lib_option
@click.option("--deep", is_flag=True, help="Hash every file instead of trusting size, time and inode.")
@click.option("--json", "json_flag", is_flag=True)
@pass_settings
def status_command(settings: Settings, torch_lib: str | None, deep: bool, json_flag: bool) -> None:
    """Is ZLUDA still placed in torch/lib, or did something (pip, antivirus) undo it? Exit 3 on drift."""
    from zluda_runner.launch.windows import status

    st = status(_resolve_torch_lib(settings, torch_lib), deep=deep)
    code = exitcodes.CHECK_FAILED if st.needs_replace and st.state != "none" else exitcodes.OK
    if want_json(settings, json_flag):
        emit_json(st)
        sys.exit(code)
    click.echo(f"state: {st.state}")
    for f in st.files:
        click.echo(f"  {f.state:9} {f.name}")
    for line in st.drift:
        click.echo(f"drift: {line}")
    click.echo(st.advice)
    sys.exit(code)


COMMANDS: list[click.Command] = [place_command, restore_command, status_command]
