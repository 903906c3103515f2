"""restore / status: Windows DLL placement in torch/lib, undone exactly, drift detected."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.settings import Settings


def _torch_lib_option(func):
    return click.option(
        "--torch-lib", metavar="DIR", help="The torch/lib folder (default: the target interpreter's)."
    )(func)


def _resolve_torch_lib(settings: Settings, torch_lib: str | None) -> Path:
    if torch_lib:
        return Path(torch_lib)
    from zluda_runner.target.interpreter import probe_interpreter

    facts = probe_interpreter(settings.python or sys.executable, env=dict(os.environ))
    if not facts.torch_path:
        from zluda_runner.core.errors import PlacementError

        raise PlacementError(
            f"no torch in {facts.executable}: nothing placed there to check",
            hint="pass --torch-lib DIR or --python PY",
        )
    return Path(facts.torch_path) / "lib"


@click.command("restore")
@_torch_lib_option
@click.option("--force", "force_opt", is_flag=True, help="Also put back files changed since placement.")
@click.option("--json", "json_flag", is_flag=True)
@pass_settings
def restore_command(settings: Settings, torch_lib: str | None, force_opt: bool, json_flag: bool) -> None:
    """Put back exactly the DLLs that were in torch/lib before zluda-run placed ZLUDA's."""
    from zluda_runner.launch.windows import restore

    result = restore(_resolve_torch_lib(settings, torch_lib), force=force_opt)
    if want_json(settings, json_flag):
        emit_json(result)
        return
    for name in result.restored:
        click.echo(f"restored {name}")
    for name in getattr(result, "removed", []):
        click.echo(f"removed  {name} (was not there before)")
    for name in result.skipped:
        click.echo(f"skipped  {name} (changed since placement; --force to restore anyway)")


@click.command("status")
@_torch_lib_option
@click.option("--json", "json_flag", is_flag=True)
@pass_settings
def status_command(settings: Settings, torch_lib: str | None, json_flag: bool) -> None:
    """Is ZLUDA still placed in torch/lib, or did something (pip) undo it?"""
    from zluda_runner.launch.windows import status

    st = status(_resolve_torch_lib(settings, torch_lib))
    if want_json(settings, json_flag):
        emit_json(st)
        return
    click.echo(f"state: {st.state}")
    for f in st.files:
        click.echo(f"  {f.state:9} {f.name}")
    if st.drift:
        click.echo("drift detected: the next `zluda-run` re-places the changed files")
    sys.exit(1 if st.drift else 0)


COMMANDS: list[click.Command] = [restore_command, status_command]
