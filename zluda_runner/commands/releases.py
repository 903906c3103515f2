"""``zluda-run releases`` (list the manifest, or pick a release) and ``zluda-run manifest update``."""

from __future__ import annotations

import click

from zluda_runner.api.releases import list_releases, update_manifest
from zluda_runner.api.terms import CHANNELS, OSES
from zluda_runner.commands import command, group
from zluda_runner.commands.common import Invocation, emit_json, pass_invocation
from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.report.terminal import say


@command("releases")
@click.option("--os", "os_name", type=click.Choice(OSES), help="Select for this OS (default: this host's).")
@click.option("--hip", metavar="X.Y", help="The HIP SDK / ROCm version you have, e.g. 6.2 (default: found "
              "on this host when selecting for it).")
@click.option("--cuda", metavar="N", help="The CUDA your torch is built for: 11, 12.8 or cu118.")
@click.option("--channel", type=click.Choice(CHANNELS), default="stable", show_default=True,
              help="'preview' also offers nightly and CI preview builds.")
@click.option("--gpu", "gfx", metavar="GFX", help="Your GPU's gfx name (gfx1201): adds its HIP rules.")
@click.option("--all", "list_all", is_flag=True, help="List every release of the manifest; select nothing.")
@pass_invocation
def releases_command(
    call: Invocation, os_name: str | None, hip: str | None, cuda: str | None, channel: str, gfx: str | None,
    list_all: bool) -> None:
    """
    \b
      zluda-run releases
      zluda-run releases --os windows --hip 6.4 --cuda cu118
    """
    from zluda_runner.report.releases_view import render_for_terminal as render_releases

    listing = list_releases(call.options, os=os_name, hip=hip, cuda=cuda, channel=channel, gpu=gfx,
                            select=not list_all)
    known = list(listing.recorded_on_this_gpu)  # what the results store says of this GPU
    if call.json:
        emit_json(listing.report.to_json_dict() | {"recorded_on_this_gpu": known})
    else:
        say([render_releases(listing.report, [f"results store: {line}" for line in known])])
    if listing.report.nothing_fits:
        raise click.exceptions.Exit(CHECK_FAILED)


manifest_group = group("manifest")


@manifest_group.command("update")
@click.argument("url", required=False)
@click.option("--allow-http", is_flag=True, help="Accept a plain http:// URL (no TLS) that is not 127.0.0.1.")
@pass_invocation
def update_command(call: Invocation, url: str | None, allow_http: bool) -> None:
    """Fetch a newer manifest from URL (default $ZLUDA_RUNNER_MANIFEST_URL, else the last update's) over TLS,
    validated, for every command (--manifest wins); an older, malformed or oversized one replaces nothing."""
    result = update_manifest(url, call.options, allow_http=allow_http)
    text = result.message + (f"\n  saved to {result.path}" if result.replaced else "")
    emit_json(result) if call.json else click.echo(text)


COMMANDS: list[click.Command] = [releases_command, manifest_group]
