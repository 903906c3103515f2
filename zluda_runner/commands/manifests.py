"""``zluda-run manifest update [URL]``: fetch a newer release manifest into the cache."""

from __future__ import annotations

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.settings import Settings
from zluda_runner.release.update import update_manifest


@click.group("manifest")
def manifest_group() -> None:
    """The release manifest: keep it current without a new package."""


@manifest_group.command("update")
@click.argument("url", required=False)
@click.option("--allow-http", is_flag=True, help="Accept a plain http:// URL (no TLS) that is not 127.0.0.1.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema 1).")
@pass_settings
def update_command(settings: Settings, url: str | None, allow_http: bool, as_json: bool) -> None:
    """Fetch a newer manifest from URL (default $ZLUDA_RUNNER_MANIFEST_URL) over TLS, validate it,
    and make it the one every command uses (--manifest still wins). An older, malformed or
    oversized manifest is refused and nothing is replaced."""
    result = update_manifest(settings.cache_dir, url, allow_http=allow_http)
    if want_json(settings, as_json):
        emit_json(result)
    else:
        click.echo(result.message + (f"\n  saved to {result.path}" if result.replaced else ""))


COMMANDS: list[click.Command] = [manifest_group]
