"""``zluda-run fetch`` and the ``zluda-run cache`` group (list, path, clean).

``cache_group`` is a module-level click group so other areas can add
subcommands (``cache_group.add_command(...)``).
"""

from __future__ import annotations

from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.exitcodes import INTERRUPTED
from zluda_runner.core.paths import MIRROR_ENV
from zluda_runner.core.settings import Settings
from zluda_runner.core.units import format_bytes
from zluda_runner.release.cache import (
    CacheEntry,
    CacheLayout,
    Interrupted,
    TrustStore,
    clean_cache,
    list_cache,
)
from zluda_runner.release.manifest import OSES
from zluda_runner.release.obtain import cached_folders, fetch, release_id_for


@click.command("fetch")
@click.argument("version", required=False)
@click.option(
    "--os", "os_name", type=click.Choice(list(OSES)), help="Fetch for this OS (default: this host)."
)
@click.option("--hip", metavar="X.Y", help="The HIP/ROCm version the release must work with.")
@click.option("--cuda", type=int, metavar="N", help="The CUDA major of the torch build it must serve.")
@click.option(
    "--archive",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Install this hand-downloaded archive instead of downloading (verified like a download).",
)
@click.option(
    "--trust-on-first-use",
    is_flag=True,
    help="Accept an asset whose SHA-256 the manifest does not know, and record the hash seen now "
    "(refused over plain http).",
)
@click.option(
    "--reinstall",
    is_flag=True,
    help="Replace the cached copy (e.g. one changed after install, or with --archive FILE).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
@pass_settings
def fetch_command(
    settings: Settings,
    ctx: click.Context,
    version: str | None,
    os_name: str | None,
    hip: str | None,
    cuda: int | None,
    archive: Path | None,
    trust_on_first_use: bool,
    reinstall: bool,
    as_json: bool,
) -> None:
    """Download, verify and unpack a ZLUDA release into the cache; print its folder.

    Without VERSION (or --release), the release selected for this host and the
    given constraints. Downloads are verified against the manifest's SHA-256,
    and a cached release is checked file by file against what was installed.
    An interrupted download (Ctrl-C, exit 130) is resumed by the next fetch.
    A mirror set in ZLUDA_RUNNER_MIRROR replaces the upstream host:
    https://github.com/vosen/ZLUDA/releases/download/v5/X becomes
    <mirror>/vosen/ZLUDA/releases/download/v5/X (http(s):// or file://).
    """
    try:
        result = fetch(settings.manifest, settings.cache_dir, version=version or settings.release,
                       os_name=os_name, hip=hip, cuda=cuda, archive=archive,
                       trust_on_first_use=trust_on_first_use, reinstall=reinstall)
    except Interrupted as exc:
        click.echo(exc.note, err=True)
        ctx.exit(INTERRUPTED)
    if want_json(settings, as_json):
        emit_json(result)
        return
    for note in result.notes:
        click.echo(note, err=True)
    click.echo(str(result.path))


cache_group = click.Group(
    "cache",
    help="Inspect or clean the cache of downloaded and unpacked releases.\n\n"
    f"Downloads honour {MIRROR_ENV}; see `zluda-run fetch --help`.",
)


def _entries_table(entries: list[CacheEntry]) -> str:
    header = ["RELEASE", "ASSET", "SIZE", "HASH FROM", "FETCHED", "PATH"]
    rows = [[e.release_id, e.asset, format_bytes(e.bytes_on_disk), e.hash_source, e.fetched_at, str(e.path)]
            for e in entries]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *rows])


@cache_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the cache content as JSON.")
@pass_settings
def cache_list(settings: Settings, as_json: bool) -> None:
    """List the releases in the cache."""
    entries = list_cache(settings.cache_dir)
    if want_json(settings, as_json):
        trusted = TrustStore(CacheLayout(settings.cache_dir)).entries()
        emit_json({"cache_dir": settings.cache_dir, "releases": entries, "trusted": trusted})
        return
    if not entries:
        click.echo(f"no releases cached in {settings.cache_dir}")
        return
    click.echo(_entries_table(entries))


@cache_group.command("path")
@click.argument("version", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the folder(s) as JSON.")
@pass_settings
def cache_path(settings: Settings, version: str | None, as_json: bool) -> None:
    """Print the cache folder, or the unpacked folder(s) of release VERSION."""
    if version is None:
        release_id, folders = None, [settings.cache_dir]
    else:
        release_id, folders = cached_folders(settings.manifest, settings.cache_dir, version)
    if want_json(settings, as_json):
        emit_json({"cache_dir": settings.cache_dir, "release": release_id, "paths": folders})
        return
    for folder in folders:
        click.echo(str(folder))


@cache_group.command("clean")
@click.argument("version", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
@pass_settings
def cache_clean(settings: Settings, version: str | None, as_json: bool) -> None:
    """Remove release VERSION from the cache, or every release (the trust file is kept)."""
    release_id = release_id_for(settings.manifest, settings.cache_dir, version) if version else None
    result = clean_cache(settings.cache_dir, release_id)
    if want_json(settings, as_json):
        emit_json({"release": release_id, "removed": result.removed, "bytes_freed": result.bytes_freed,
                   "busy": result.busy})
        return
    what = f"release {release_id}" if release_id else "all releases"
    click.echo(f"removed {len(result.removed)} item(s) of {what}, freed {format_bytes(result.bytes_freed)}")
    if result.busy:
        click.echo(
            f"kept {', '.join(result.busy)}: another zluda-run is fetching it; run `zluda-run cache clean` "
            "again when it is done",
            err=True,
        )


COMMANDS: list[click.Command] = [fetch_command, cache_group]
