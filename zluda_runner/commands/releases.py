"""``zluda-run releases``: list the manifest's ZLUDA releases, or pick one for given constraints."""

from __future__ import annotations

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.core.settings import Settings
from zluda_runner.host.hipversion import host_hip_version
from zluda_runner.release.listing import releases_report, render_text
from zluda_runner.release.model import OSES
from zluda_runner.release.selection import CHANNEL_CHOICES


@click.command("releases")
@click.option("--os", "os_name", type=click.Choice(OSES), help="Select for this OS (default: this host's).")
@click.option("--hip", metavar="X.Y", help="The HIP SDK / ROCm version you have, e.g. 6.2 (default: found "
              "on this host when selecting for it).")
@click.option("--cuda", metavar="N", help="The CUDA your torch is built for: 11, 12.8 or cu118.")
@click.option("--release", "release", metavar="VERSION", help="Only this release (id, version or tag); "
              "says first why it does not fit.")
@click.option("--channel", type=click.Choice(CHANNEL_CHOICES), default="stable", show_default=True,
              help="'preview' also offers nightly and CI preview builds.")
@click.option("--gpu", "gfx", metavar="GFX", help="Your GPU's gfx name (gfx1201): adds its HIP rules.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema 1).")
@pass_settings
def releases_command(
    settings: Settings, os_name: str | None, hip: str | None, cuda: str | None, release: str | None,
    channel: str, gfx: str | None, as_json: bool,
) -> None:
    """List the ZLUDA releases in the manifest, with the source of every fact; with --os/--hip/--cuda
    (or --release/--channel), pick one. Exit 3 when nothing fits.

    \b
      zluda-run releases
      zluda-run releases --os windows --hip 6.4 --cuda cu118
    """
    report = releases_report(
        manifest_path=settings.manifest, cache_dir=settings.cache_dir, os_name=os_name, hip=hip, cuda=cuda,
        release=release or settings.release, channel=channel, gfx=gfx, detect_hip=host_hip_version,
    )
    if want_json(settings, as_json):
        emit_json(report.to_json_dict())
    else:
        click.echo(render_text(report))
    if report.nothing_fits:
        raise click.exceptions.Exit(CHECK_FAILED)


COMMANDS: list[click.Command] = [releases_command]
