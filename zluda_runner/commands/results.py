"""``zluda-run results``: list, show, delete, diff, matrix, export and import recorded runs."""

from __future__ import annotations

from pathlib import Path

import click

from zluda_runner.api.store import (
    delete_result,
    diff_results,
    export_results,
    get_result,
    import_results,
    list_results,
    results_location,
    results_matrix,
)
from zluda_runner.api.terms import RESULT_KINDS
from zluda_runner.commands import group
from zluda_runner.commands.common import GivenPath, Invocation, emit_json, pass_invocation
from zluda_runner.report.results_view import render_diff, render_matrix, render_run, render_runs
from zluda_runner.report.terminal import say

_since = click.option("--since", metavar="DATE", help="Only runs started on or after DATE (YYYY-MM-DD).")


results_group = group("results")


@results_group.command("list")
@click.option("--kind", type=click.Choice(RESULT_KINDS), help="Only runs of this kind.")
@click.option("--gfx", metavar="GFX", help="Only runs on this GPU target (e.g. gfx1100).")
@_since
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True, help="The latest N runs.")
@pass_invocation
def list_command(call: Invocation, kind: str | None, gfx: str | None, since: str | None, limit: int) -> None:
    """The recorded runs, oldest first."""
    runs = list_results(call.options, kind=kind, gpu=gfx, since=since, limit=limit)
    location = results_location(call.options)
    (emit_json({"store": location, "runs": [r.to_dict() | {"items": None} for r in runs]})
     if call.json else say([render_runs(runs, location)]))


@results_group.command("show")
@click.argument("run_id")
@pass_invocation
def show_command(call: Invocation, run_id: str) -> None:
    """One run with all its items (RUN_ID: at least 4 hex digits of its id)."""
    run = get_result(run_id, call.options)
    emit_json({"run": run.to_dict()}) if call.json else say([render_run(run)])


@results_group.command("delete")
@click.argument("run_id")
@pass_invocation
def delete_command(call: Invocation, run_id: str) -> None:
    """Remove one run and its items from the store (RUN_ID: at least 4 hex digits of its id)."""
    deleted = delete_result(run_id, call.options)
    location = results_location(call.options)
    (emit_json({"deleted": deleted, "store": location}) if call.json
     else click.echo(f"deleted run {deleted[:12]} from {location}"))


@results_group.command("diff")
@click.argument("run_a")
@click.argument("run_b")
@pass_invocation
def diff_command(call: Invocation, run_a: str, run_b: str) -> None:
    """What changed from RUN_A to RUN_B: newly failing items, fixed ones, speed changes."""
    found = diff_results(run_a, run_b, call.options)
    emit_json(found.diff) if call.json else say([render_diff(found.a, found.b, found.diff)])


@results_group.command("matrix")
@click.option("--html", "html_path", type=GivenPath(dir_okay=False), help="Write HTML.")
@_since
@pass_invocation
def matrix_command(call: Invocation, html_path: Path | None, since: str | None) -> None:
    """Releases x GPU targets x torch builds: pass rates, A/B verdicts, failing items."""
    if html_path is None:
        matrix = results_matrix(call.options, since=since)
    else:  # only then the page and its writer are imported
        from zluda_runner.api.store import output_path, results_files, write_output
        from zluda_runner.report.matrix_html import render_html

        keep = results_files(call.options)
        html = output_path(html_path, keep)  # refused before the store is read
        matrix = results_matrix(call.options, since=since)
        click.echo(f"HTML: {write_output(html, render_html(matrix), keep)}", err=True)
    emit_json(matrix) if call.json else say([render_matrix(matrix)])


@results_group.command("export")
@click.argument("file", type=GivenPath(dir_okay=False))
@_since
@pass_invocation
def export_command(call: Invocation, file: Path, since: str | None) -> None:
    """Write the runs to FILE, a bundle to share (JSON lines; nothing personal)."""
    count = export_results(file, call.options, since=since)
    (emit_json({"exported": count, "file": str(file)}) if call.json
     else click.echo(f"exported {count} run(s) to {file}"))


@results_group.command("import")
@click.argument("files", nargs=-1, required=True, type=GivenPath(dir_okay=False))
@pass_invocation
def import_command(call: Invocation, files: tuple[Path, ...]) -> None:
    """Merge bundles into the store; a run already stored is skipped."""
    imported, already = import_results(files, call.options)
    (emit_json({"imported": imported, "already_stored": already, "files": [str(f) for f in files]})
     if call.json else click.echo(f"imported {imported} run(s); {already} already stored"))


COMMANDS: list[click.Command] = [results_group]
