"""``zluda-run releases`` (list the manifest, or pick a release) and ``zluda-run manifest update``."""

from __future__ import annotations

import click

from zluda_runner.commands.common import emit_json, pass_settings
from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.core.settings import Settings
from zluda_runner.host.quick import hip_found, quick_facts
from zluda_runner.launch.prepare import target_cuda
from zluda_runner.release.listing import releases_report, render_for_terminal, update_url
from zluda_runner.release.model import OSES
from zluda_runner.release.selection import CHANNEL_CHOICES
from zluda_runner.release.update import update_manifest
from zluda_runner.results.recording import known_on_this_gpu


@click.command("releases")
@click.option("--os", "os_name", type=click.Choice(OSES), help="Select for this OS (default: this host's).")
@click.option("--hip", metavar="X.Y", help="The HIP SDK / ROCm version you have, e.g. 6.2 (default: found "
              "on this host when selecting for it).")
@click.option("--cuda", metavar="N", help="The CUDA your torch is built for: 11, 12.8 or cu118.")
@click.option("--channel", type=click.Choice(CHANNEL_CHOICES), default="stable", show_default=True,
              help="'preview' also offers nightly and CI preview builds.")
@click.option("--gpu", "gfx", metavar="GFX", help="Your GPU's gfx name (gfx1201): adds its HIP rules.")
@click.option("--all", "list_all", is_flag=True, help="List every release of the manifest; select nothing.")
@pass_settings
def releases_command(
    settings: Settings, os_name: str | None, hip: str | None, cuda: str | None, channel: str, gfx: str | None,
    list_all: bool) -> None:
    """Pick the release for this host's HIP and this (--python) torch as run does; exit 3 if nothing fits.

    \b
      zluda-run releases
      zluda-run releases --os windows --hip 6.4 --cuda cu118
    """
    report = releases_report(
        manifest_path=settings.manifest, cache_dir=settings.cache_dir, os_name=os_name, hip=hip, cuda=cuda,
        release=settings.release, channel=channel, gfx=gfx, detect_hip=lambda: hip_found().version,
        for_host=not list_all, detect_cuda=lambda: target_cuda(settings.python),
    )
    known = known_on_this_gpu(settings, quick_facts().gfx)  # what the results store says of this GPU
    if settings.json:
        emit_json(report.to_json_dict() | {"recorded_on_this_gpu": known})
    else:
        click.echo(render_for_terminal(report, [f"results store: {line}" for line in known]))
    if report.nothing_fits:
        raise click.exceptions.Exit(CHECK_FAILED)


@click.group("manifest")
def manifest_group() -> None:
    """The release manifest: keep it current without a new package."""


@manifest_group.command("update")
@click.argument("url", required=False)
@click.option("--allow-http", is_flag=True, help="Accept a plain http:// URL (no TLS) that is not 127.0.0.1.")
@pass_settings
def update_command(settings: Settings, url: str | None, allow_http: bool) -> None:
    """Fetch a newer manifest from URL (default $ZLUDA_RUNNER_MANIFEST_URL, else the last update's) over TLS,
    validated, for every command (--manifest wins); an older, malformed or oversized one replaces nothing."""
    result = update_manifest(settings.cache_dir, update_url(url, settings.cache_dir), allow_http=allow_http)
    text = result.message + (f"\n  saved to {result.path}" if result.replaced else "")
    emit_json(result) if settings.json else click.echo(text)


COMMANDS: list[click.Command] = [releases_command, manifest_group]
