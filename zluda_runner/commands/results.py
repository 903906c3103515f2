"""``zluda-run results``: list, show, diff, matrix, export and import recorded runs."""

from __future__ import annotations

from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.settings import Settings
from zluda_runner.results.backends import RESULTS_DB_ENV, open_store
from zluda_runner.results.schema import KINDS, ResultsStoreError, RunRecord
from zluda_runner.results.store import ResultsStore

_DB_KEY = "zluda_runner.results_db"


def _store(settings: Settings) -> ResultsStore:
    url = click.get_current_context().meta.get(_DB_KEY)
    store = open_store(settings, url)
    assert store is not None  # create=True always opens
    return store


def _run_line(run: RunRecord) -> str:
    s = run.summary
    counts = (
        f"{s.get('passed', 0)}/{s.get('total', 0)} passing"
        if s.get("total")
        else f"{s.get('items', 0)} items"
    )
    if run.kind == "ab" and s.get("verdict"):
        counts = str(s["verdict"])
    return (
        f"{run.run_id[:12]}  {run.started_at[:19].replace('T', ' ')}  {run.kind:11} {run.release_id:18} "
        f"{run.gfx:9} {run.torch_build:14} {counts}"
    )


@click.group("results")
@click.option(
    "--results-db",
    "results_db",
    metavar="URL",
    envvar=RESULTS_DB_ENV,
    help="postgresql://user@host/db or a SQLite file (default: results.db in the cache folder).",
)
@click.pass_context
def results_group(ctx: click.Context, results_db: str | None) -> None:
    """The runs recorded so far: list, compare, the compatibility matrix, sharing."""
    ctx.meta[_DB_KEY] = results_db


@results_group.command("list")
@click.option("--kind", type=click.Choice(KINDS), help="Only runs of this kind.")
@click.option("--gfx", metavar="GFX", help="Only runs on this GPU target (e.g. gfx1100).")
@click.option("--since", metavar="DATE", help="Only runs started on or after DATE (YYYY-MM-DD).")
@click.option(
    "--limit", type=click.IntRange(1), default=50, show_default=True, help="The most recent N runs."
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_settings
def list_command(
    settings: Settings, kind: str | None, gfx: str | None, since: str | None, limit: int, as_json: bool
) -> None:
    """The recorded runs, oldest first."""
    from zluda_runner.results.bundle import check_since

    with _store(settings) as store:
        runs = store.list_runs(kind=kind, gfx=gfx, since=check_since(since), limit=limit)
        location = store.location
    if want_json(settings, as_json):
        emit_json(
            {
                "store": location,
                "runs": [{k: v for k, v in r.to_dict().items() if k != "items"} for r in runs],
            }
        )
        return
    if not runs:
        click.echo(f"no runs recorded in {location}")
        return
    for run in runs:
        click.echo(_run_line(run))


@results_group.command("show")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_settings
def show_command(settings: Settings, run_id: str, as_json: bool) -> None:
    """One run with all its items (RUN_ID: at least 4 hex digits of its id)."""
    with _store(settings) as store:
        run = store.get_run(run_id)
    if want_json(settings, as_json):
        emit_json({"run": run.to_dict()})
        return
    click.echo(_run_line(run))
    host = ", ".join(f"{k}={v}" for k, v in sorted(run.host.items()))
    click.echo(f"host: {host}")
    if run.release:
        click.echo("release: " + ", ".join(f"{k}={v}" for k, v in sorted(run.release.items())))
    if run.target:
        click.echo("target: " + ", ".join(f"{k}={v}" for k, v in sorted(run.target.items())))
    click.echo("command: " + " ".join(run.command))
    for item in run.items:
        mark = {True: "ok  ", False: "FAIL", None: "    "}[item.ok]
        numbers = " ".join(f"{k}={v:.4g}" for k, v in sorted(item.numbers.items()) if v is not None)
        click.echo(f"  {mark} {item.item:40} {item.status:10} {item.detail} {numbers}".rstrip())


@results_group.command("diff")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_settings
def diff_command(settings: Settings, run_a: str, run_b: str, as_json: bool) -> None:
    """What changed from RUN_A to RUN_B: newly failing items, fixed ones, speed changes."""
    from zluda_runner.results.queries import diff_runs

    with _store(settings) as store:
        a, b = store.get_run(run_a), store.get_run(run_b)
    diff = diff_runs(a, b)
    if want_json(settings, as_json):
        emit_json(diff)
        return
    click.echo(
        f"{a.run_id[:12]} ({a.kind}, {a.started_at[:10]}) -> {b.run_id[:12]} ({b.kind}, {b.started_at[:10]})"
    )
    for title, changes in (
        ("newly failing", diff.newly_failing),
        ("fixed", diff.fixed),
        ("status changed", diff.changed),
        ("only in B", diff.added),
        ("only in A", diff.removed),
    ):
        if changes:
            click.echo(f"{title} ({len(changes)}):")
            for c in changes:
                click.echo(f"  {c.item}: {c.before or '-'} -> {c.after or '-'} {c.detail}".rstrip())
    for s in diff.speed:
        click.echo(
            f"speed: {s.item} side {s.side}: {s.before_s:.4g} s -> {s.after_s:.4g} s ({s.change:+.0%})"
        )
    if not (diff.newly_failing or diff.fixed or diff.changed or diff.added or diff.removed or diff.speed):
        click.echo("no changes")


@results_group.command("matrix")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the HTML view."
)
@click.option("--since", metavar="DATE", help="Only runs started on or after DATE.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_settings
def matrix_command(settings: Settings, html_path: Path | None, since: str | None, as_json: bool) -> None:
    """Releases x GPU targets x torch builds: pass rates, A/B verdicts, failing items."""
    from zluda_runner.report.matrix_html import render_html
    from zluda_runner.results.bundle import check_since
    from zluda_runner.results.matrix import build_matrix, render_text

    with _store(settings) as store:
        matrix = build_matrix(store, since=check_since(since))
    if html_path is not None:
        try:
            html_path.parent.mkdir(parents=True, exist_ok=True)
            html_path.write_text(render_html(matrix), encoding="utf-8")
        except OSError as exc:
            raise ResultsStoreError(
                f"cannot write {html_path}: {exc.strerror or exc}",
                "pass --html a path in a folder you can write to",
            ) from exc
    if want_json(settings, as_json):
        emit_json(matrix)
        return
    click.echo(render_text(matrix))
    if html_path is not None:
        click.echo(f"HTML: {html_path}")


@results_group.command("export")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--since", metavar="DATE", help="Only runs started on or after DATE (YYYY-MM-DD).")
@pass_settings
def export_command(settings: Settings, file: Path, since: str | None) -> None:
    """Write the runs to FILE, a bundle to share (JSON lines; nothing personal)."""
    from zluda_runner.results.bundle import export_bundle

    with _store(settings) as store:
        count = export_bundle(store, file, since=since)
    click.echo(f"exported {count} run(s) to {file}")


@results_group.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@pass_settings
def import_command(settings: Settings, files: tuple[Path, ...]) -> None:
    """Merge bundles into the store; a run already stored is skipped."""
    from zluda_runner.results.bundle import import_bundles

    with _store(settings) as store:
        added, skipped = import_bundles(store, list(files))
    click.echo(f"imported {added} run(s); {skipped} already stored")


COMMANDS = [results_group]
