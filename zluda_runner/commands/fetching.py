"""``zluda-run fetch`` and the ``zluda-run cache`` group (list, path, clean).

``cache_group`` is a module-level click group so other areas can add
subcommands (``cache_group.add_command(...)``).
"""

from __future__ import annotations

from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.errors import CacheError, ManifestError, SelectionError
from zluda_runner.core.paths import MIRROR_ENV
from zluda_runner.core.settings import Settings
from zluda_runner.core.units import format_bytes
from zluda_runner.release.cache import (
    CacheEntry,
    CacheLayout,
    TrustStore,
    clean_cache,
    ensure_release,
    list_cache,
    safe_component,
)
from zluda_runner.release.manifest import OSES, Asset, Manifest, Release, load_manifest, resolve_release_root
from zluda_runner.release.selection import select_asset


def _pick(
    manifest: Manifest,
    version: str | None,
    os_name: str | None,
    hip: str | None,
    cuda: int | None,
    archive: Path | None,
) -> tuple[Release, Asset]:
    """The release + asset to fetch: by the hand-downloaded file's name when that is
    unambiguous, else the selection for the constraints (and VERSION, if given)."""
    if archive is not None:
        releases = [manifest.find(version)] if version else manifest.releases
        named = [(r, a) for r in releases for a in r.assets
                 if a.name == archive.name and (os_name is None or a.os == os_name)]
        if len(named) == 1:
            return named[0]
        if len(named) > 1:  # the same file name in several releases: never guess which one it is
            ids = ", ".join(r.id for r, _ in named)
            raise SelectionError(
                f"The archive name {archive.name} is an asset of several releases ({ids}); "
                "zluda-runner cannot tell which one this file is.",
                hint=f"Name the release, e.g. `zluda-run fetch {named[0][0].id} --archive {archive}`.",
            )
    choice = select_asset(manifest, os=os_name, hip=hip, cuda=cuda, release=version).require()
    return choice.release, choice.asset


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
    help="Accept an asset whose SHA-256 the manifest does not know, and record the hash seen now.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@pass_settings
def fetch_command(
    settings: Settings,
    version: str | None,
    os_name: str | None,
    hip: str | None,
    cuda: int | None,
    archive: Path | None,
    trust_on_first_use: bool,
    as_json: bool,
) -> None:
    """Download, verify and unpack a ZLUDA release into the cache; print its folder.

    Without VERSION (or --release), the release selected for this host and the
    given constraints. Downloads are verified against the manifest's SHA-256.
    A mirror set in ZLUDA_RUNNER_MIRROR replaces the upstream host:
    https://github.com/vosen/ZLUDA/releases/download/v5/X becomes
    <mirror>/vosen/ZLUDA/releases/download/v5/X (http(s):// or file://).
    """
    manifest = load_manifest(settings.manifest)
    release, asset = _pick(manifest, version or settings.release, os_name, hip, cuda, archive)
    folder = ensure_release(
        release,
        asset,
        settings.cache_dir,
        trust_on_first_use=trust_on_first_use,
        archive=archive.expanduser() if archive else None,
    )
    root = resolve_release_root(folder, asset)
    if want_json(settings, as_json):
        entry = next((e for e in list_cache(settings.cache_dir) if e.path == folder), None)
        emit_json(
            {
                "release": release.id,
                "asset": asset.name,
                "path": root,
                "unpacked": folder,
                "sha256": entry.sha256 if entry else asset.sha256,
                "hash_source": entry.hash_source if entry else None,
                "url": asset.url,
            }
        )
    else:
        click.echo(str(root))


cache_group = click.Group(
    "cache",
    help="Inspect or clean the cache of downloaded and unpacked releases.\n\n"
    f"Downloads honour {MIRROR_ENV}; see `zluda-run fetch --help`.",
)


def _release_ids(settings: Settings, version: str) -> str:
    """A manifest release's id for VERSION, or VERSION itself when the cache holds such an id."""
    try:
        return load_manifest(settings.manifest).find(version).id
    except ManifestError:
        layout = CacheLayout(settings.cache_dir)
        key = safe_component(version, "release id")
        if (layout.releases / key).exists() or (layout.downloads / key).exists():
            return version
        raise




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
@pass_settings
def cache_path(settings: Settings, version: str | None) -> None:
    """Print the cache folder, or the unpacked folder(s) of release VERSION."""
    if version is None:
        click.echo(str(settings.cache_dir))
        return
    release_id = _release_ids(settings, version)
    hits = [e for e in list_cache(settings.cache_dir) if e.release_id == release_id]
    if not hits:
        raise CacheError(
            f"Release {release_id} is not in the cache {settings.cache_dir}.",
            hint=f"Fetch it with `zluda-run fetch {version}`.",
        )
    for entry in hits:
        click.echo(str(entry.path))


@cache_group.command("clean")
@click.argument("version", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
@pass_settings
def cache_clean(settings: Settings, version: str | None, as_json: bool) -> None:
    """Remove release VERSION from the cache, or every release (the trust file is kept)."""
    release_id = _release_ids(settings, version) if version else None
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
