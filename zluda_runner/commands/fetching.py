"""``zluda-run fetch`` and the ``zluda-run cache`` group (list, path, clean, compile).

``--archive FILE`` and ``--trust-on-first-use`` are global options: they work wherever a release
is needed, and after the command name too. ``cache compile`` is ZLUDA's own compile cache.
"""

from __future__ import annotations

import sys

import click

from zluda_runner.api.cache import cache_path as find_cache_path
from zluda_runner.api.cache import clean_cache, clean_compile_cache, compile_cache, list_cache
from zluda_runner.api.releases import fetch
from zluda_runner.api.terms import OSES
from zluda_runner.commands import command, group
from zluda_runner.commands.common import Invocation, emit_json, pass_invocation
from zluda_runner.core.envnames import MIRROR_ENV
from zluda_runner.report.terminal import say


@command("fetch")
@click.argument("version", required=False)
@click.option("--os", "os_name", type=click.Choice(list(OSES)), help="For this OS (default: this host).")
@click.option("--hip", metavar="X.Y", help="The HIP/ROCm version the release must work with.")
@click.option("--cuda", type=int, metavar="N", help="The CUDA major of the torch build it must serve.")
@click.option("--reinstall", is_flag=True,
              help="Replace the cached copy (e.g. one changed after install, or with --archive FILE).")
@pass_invocation
def fetch_command(call: Invocation, version: str | None, os_name: str | None, hip: str | None,
                  cuda: int | None, reinstall: bool) -> None:
    """Without VERSION (or --release), the release selected for this host and the given constraints.
    Downloads are verified against the manifest's SHA-256 (--archive FILE: a hand-downloaded copy,
    verified the same way), and a cached release is checked file by file against what was
    installed. An interrupted download (Ctrl-C, exit 130) is resumed by the next fetch.
    ZLUDA_RUNNER_MIRROR replaces the upstream host: .../vosen/ZLUDA/releases/download/v5/X becomes
    <mirror>/vosen/ZLUDA/releases/download/v5/X (http(s):// or file://).
    """
    result = fetch(call.options, version=version, os=os_name, hip=hip, cuda=cuda, reinstall=reinstall,
                   progress=True)  # Ctrl-C: zluda_runner.cli.main says what was kept, exit 130
    if call.json:
        emit_json(result)
        return
    for note in result.notes:
        click.echo(note, err=True)
    click.echo(str(result.path))


cache_group = group("cache", f"Downloads honour {MIRROR_ENV}; see `zluda-run fetch --help`.")


@cache_group.command("list")
@pass_invocation
def cache_list(call: Invocation) -> None:
    """List the releases in the cache, and the partial downloads the next fetch resumes."""
    from zluda_runner.report.cache_view import print_entries

    listing = list_cache(call.options)
    if call.json:
        emit_json(dict(cache_dir=listing.cache_dir, releases=listing.releases, partial=listing.partial,
                       trusted=dict(listing.trusted)))
    else:
        print_entries(list(listing.releases), listing.cache_dir, list(listing.partial))


@cache_group.command("path")
@click.argument("version", required=False)
@pass_invocation
def cache_path(call: Invocation, version: str | None) -> None:
    """Print the cache folder, or the unpacked folder(s) of release VERSION."""
    found = find_cache_path(version, call.options)
    if call.json:
        emit_json({"cache_dir": found.cache_dir, "release": found.release, "paths": found.paths})
    else:
        click.echo("\n".join(str(f) for f in found.paths))


@cache_group.command("clean")
@click.argument("version", required=False)
@pass_invocation
def cache_clean(call: Invocation, version: str | None) -> None:
    """Remove release VERSION from the cache, or every release (the trust file is kept)."""
    from zluda_runner.report.cache_view import render_clean

    cleaned = clean_cache(version, call.options)
    result = cleaned.result
    if call.json:
        emit_json({"release": cleaned.release, "removed": result.removed, "bytes_freed": result.bytes_freed,
                   "busy": result.busy})
        return
    say([render_clean(result, cleaned.release)])
    if result.busy:
        click.echo(f"kept {', '.join(result.busy)}: another zluda-run is fetching it; run `zluda-run cache "
                   "clean` again when it is done", err=True)


@cache_group.command("compile")
@click.option("--clean", is_flag=True, help="Delete ZLUDA's compile cache databases (zluda*.db*).")
@pass_invocation
def compile_cache_command(call: Invocation, clean: bool) -> None:
    """Show (or --clean) ZLUDA's compile cache: <user cache>/ZLUDA|zluda/ComputeCache/zluda*.db."""
    from zluda_runner.report.compile_cache_view import render_compile_cache, render_compile_clean

    if not clean:
        info = compile_cache()
        emit_json(info) if call.json else say([render_compile_cache(info)])
        return
    result = clean_compile_cache()
    emit_json(result) if call.json else say([render_compile_clean(result)])
    for failure in result.failed:
        click.echo(f"could not remove {failure}", err=True)
    sys.exit(result.exit_code)


COMMANDS: list[click.Command] = [fetch_command, cache_group]
