"""``zluda-run fetch`` and the ``zluda-run cache`` group (list, path, clean, compile).

``--archive FILE`` and ``--trust-on-first-use`` are global options: they work wherever a release
is needed, and after the command name too. ``cache compile`` is ZLUDA's own compile cache.
"""

from __future__ import annotations

import sys

import click

from zluda_runner.commands.common import emit_json, pass_settings
from zluda_runner.core.exitcodes import INTERRUPTED
from zluda_runner.core.paths import MIRROR_ENV
from zluda_runner.core.settings import Settings
from zluda_runner.release.cache import CacheLayout, Interrupted, TrustStore, cache_contents, clean_cache
from zluda_runner.release.manifest import OSES
from zluda_runner.release.obtain import cached_folders, fetch, release_id_for


@click.command("fetch")
@click.argument("version", required=False)
@click.option("--os", "os_name", type=click.Choice(list(OSES)), help="For this OS (default: this host).")
@click.option("--hip", metavar="X.Y", help="The HIP/ROCm version the release must work with.")
@click.option("--cuda", type=int, metavar="N", help="The CUDA major of the torch build it must serve.")
@click.option("--reinstall", is_flag=True,
              help="Replace the cached copy (e.g. one changed after install, or with --archive FILE).")
@click.pass_context
@pass_settings
def fetch_command(settings: Settings, ctx: click.Context, version: str | None, os_name: str | None,
                  hip: str | None, cuda: int | None, reinstall: bool) -> None:
    """Download, verify and unpack a ZLUDA release into the cache; print its folder.

    Without VERSION (or --release), the release selected for this host and the given constraints.
    Downloads are verified against the manifest's SHA-256 (--archive FILE: a hand-downloaded copy,
    verified the same way), and a cached release is checked file by file against what was
    installed. An interrupted download (Ctrl-C, exit 130) is resumed by the next fetch.
    ZLUDA_RUNNER_MIRROR replaces the upstream host: .../vosen/ZLUDA/releases/download/v5/X becomes
    <mirror>/vosen/ZLUDA/releases/download/v5/X (http(s):// or file://).
    """
    try:
        result = fetch(settings.manifest, settings.cache_dir, version=version or settings.release,
                       os_name=os_name, hip=hip, cuda=cuda, archive=settings.archive,
                       trust_on_first_use=settings.trust_on_first_use, reinstall=reinstall)
    except Interrupted as exc:
        click.echo(exc.note, err=True)
        ctx.exit(INTERRUPTED)
    if settings.json:
        emit_json(result)
        return
    for note in result.notes:
        click.echo(note, err=True)
    click.echo(str(result.path))


cache_group = click.Group("cache", help="Inspect or clean the cache of downloaded and unpacked releases.\n\n"
                          f"Downloads honour {MIRROR_ENV}; see `zluda-run fetch --help`.")


@cache_group.command("list")
@pass_settings
def cache_list(settings: Settings) -> None:
    """List the releases in the cache, and the partial downloads the next fetch resumes."""
    from zluda_runner.report.cache_view import print_entries

    entries, partial = cache_contents(settings.cache_dir)
    if settings.json:
        trusted = TrustStore(CacheLayout(settings.cache_dir)).entries()
        emit_json(dict(cache_dir=settings.cache_dir, releases=entries, partial=partial, trusted=trusted))
    else:
        print_entries(entries, settings.cache_dir, partial)


@cache_group.command("path")
@click.argument("version", required=False)
@pass_settings
def cache_path(settings: Settings, version: str | None) -> None:
    """Print the cache folder, or the unpacked folder(s) of release VERSION."""
    release_id, folders = (None, [settings.cache_dir]) if version is None else cached_folders(
        settings.manifest, settings.cache_dir, version)
    if settings.json:
        emit_json({"cache_dir": settings.cache_dir, "release": release_id, "paths": folders})
    else:
        click.echo("\n".join(str(f) for f in folders))


@cache_group.command("clean")
@click.argument("version", required=False)
@pass_settings
def cache_clean(settings: Settings, version: str | None) -> None:
    """Remove release VERSION from the cache, or every release (the trust file is kept)."""
    from zluda_runner.report.cache_view import render_clean

    release_id = release_id_for(settings.manifest, settings.cache_dir, version) if version else None
    result = clean_cache(settings.cache_dir, release_id)
    if settings.json:
        emit_json({"release": release_id, "removed": result.removed, "bytes_freed": result.bytes_freed,
                   "busy": result.busy})
        return
    click.echo(render_clean(result, release_id))
    if result.busy:
        click.echo(f"kept {', '.join(result.busy)}: another zluda-run is fetching it; run `zluda-run cache "
                   "clean` again when it is done", err=True)


@cache_group.command("compile")
@click.option("--clean", is_flag=True, help="Delete ZLUDA's compile cache databases (zluda*.db*).")
@pass_settings
def compile_cache_command(settings: Settings, clean: bool) -> None:
    """Show (or --clean) ZLUDA's compile cache: <user cache>/ZLUDA|zluda/ComputeCache/zluda*.db."""
    from zluda_runner.host.compile_cache import (
        clean_compile_cache,
        inspect_compile_cache,
        render_clean_text,
        render_text,
    )

    if not clean:
        info = inspect_compile_cache()
        emit_json(info) if settings.json else click.echo(render_text(info))
        return
    result = clean_compile_cache()
    emit_json(result) if settings.json else click.echo(render_clean_text(result))
    for failure in result.failed:
        click.echo(f"could not remove {failure}", err=True)
    sys.exit(result.exit_code)


COMMANDS: list[click.Command] = [fetch_command, cache_group]
