"""``zluda-run results``: list, show, delete, diff, matrix, export and import recorded runs."""

from __future__ import annotations

from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings
from zluda_runner.core.settings import Settings
from zluda_runner.report.files import destination, write_report
from zluda_runner.report.matrix_html import render_html
from zluda_runner.report.results_view import render_diff, render_matrix, render_run, render_runs
from zluda_runner.results import KINDS, ResultsStore, build_matrix, diff_runs, make_store, store_url
from zluda_runner.results.bundle import check_since, export_bundle, import_bundles

_since = click.option("--since", metavar="DATE", help="Only runs started on or after DATE (YYYY-MM-DD).")


def _store(settings: Settings) -> ResultsStore:
    return make_store(store_url(settings)).open()


@click.group("results")
def results_group() -> None:
    """Recorded runs: list, compare, matrix, share (--results-db, ZLUDA_RUNNER_RESULTS_DB, or the cache)."""


@results_group.command("list")
@click.option("--kind", type=click.Choice(KINDS), help="Only runs of this kind.")
@click.option("--gfx", metavar="GFX", help="Only runs on this GPU target (e.g. gfx1100).")
@_since
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True, help="The latest N runs.")
@pass_settings
def list_command(settings: Settings, kind: str | None, gfx: str | None, since: str | None,
                 limit: int) -> None:
    """The recorded runs, oldest first."""
    with _store(settings) as store:
        runs = store.list_runs(kind=kind, gfx=gfx, since=check_since(since), limit=limit)
    (emit_json({"store": store.location, "runs": [r.to_dict() | {"items": None} for r in runs]})
     if settings.json else click.echo(render_runs(runs, store.location)))


@results_group.command("show")
@click.argument("run_id")
@pass_settings
def show_command(settings: Settings, run_id: str) -> None:
    """One run with all its items (RUN_ID: at least 4 hex digits of its id)."""
    with _store(settings) as store:
        run = store.get_run(run_id)
    emit_json({"run": run.to_dict()}) if settings.json else click.echo(render_run(run))


@results_group.command("delete")
@click.argument("run_id")
@pass_settings
def delete_command(settings: Settings, run_id: str) -> None:
    """Remove one run and its items from the store (RUN_ID: at least 4 hex digits of its id)."""
    with _store(settings) as store:
        click.echo(f"deleted run {store.delete_run(store.resolve_id(run_id))[:12]} from {store.location}")


@results_group.command("diff")
@click.argument("run_a")
@click.argument("run_b")
@pass_settings
def diff_command(settings: Settings, run_a: str, run_b: str) -> None:
    """What changed from RUN_A to RUN_B: newly failing items, fixed ones, speed changes."""
    with _store(settings) as store:
        a, b = store.get_run(run_a), store.get_run(run_b)
    diff = diff_runs(a, b)
    emit_json(diff) if settings.json else click.echo(render_diff(a, b, diff))


@results_group.command("matrix")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), help="Write HTML.")
@_since
@pass_settings
def matrix_command(settings: Settings, html_path: Path | None, since: str | None) -> None:
    """Releases x GPU targets x torch builds: pass rates, A/B verdicts, failing items."""
    html = destination(html_path) if html_path else None
    with _store(settings) as store:
        matrix = build_matrix(store, since=check_since(since))
    if html is not None:
        click.echo(f"HTML: {write_report(html, render_html(matrix))}", err=True)
    emit_json(matrix) if settings.json else click.echo(render_matrix(matrix))


@results_group.command("export")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@_since
@pass_settings
def export_command(settings: Settings, file: Path, since: str | None) -> None:
    """Write the runs to FILE, a bundle to share (JSON lines; nothing personal)."""
    with _store(settings) as store:
        click.echo(f"exported {export_bundle(store, file, since=since)} run(s) to {file}")


@results_group.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@pass_settings
def import_command(settings: Settings, files: tuple[Path, ...]) -> None:
    """Merge bundles into the store; a run already stored is skipped."""
    with _store(settings) as store:
        click.echo("imported {} run(s); {} already stored".format(*import_bundles(store, list(files))))


COMMANDS = [results_group]
