"""``zluda-run probe`` (driver API / torch ops coverage) and ``zluda-run trace-report``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zluda_runner.api.checking import run_probe
from zluda_runner.api.evidence import read_trace
from zluda_runner.api.store import output_path, results_files, write_output
from zluda_runner.api.terms import TORCH_DTYPES
from zluda_runner.commands import command
from zluda_runner.commands.common import (
    SECONDS,
    GivenPath,
    Invocation,
    emit_json,
    html_option,
    pass_invocation,
    warn,
    write_page,
)
from zluda_runner.core.exitcodes import CHECK_FAILED, ERROR, OK


def _csv(text: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]`` (``--ops``, ``--dtypes``)."""
    return [part.strip() for part in text.split(",") if part.strip()]


@command("probe")
@click.option("--libcuda", type=GivenPath(), help="The libcuda to probe (default: ZLUDA's).")
@click.option("--torch", "torch_level", is_flag=True, help="Probe torch ops in the target interpreter.")
@html_option
@click.option("--timeout", type=SECONDS, help="Seconds per case (torch: per op; --quick: whole run).")
@click.option("--case", "case_ids", multiple=True, help="Run only this case (repeatable).")
@click.option("--device", default="cuda", help="torch device; cpu compares CPU results with float64.")
@click.option("--quick", is_flag=True, help="--torch: the 12 hand-written smoke ops instead of OpInfo.")
@click.option("--ops", default="", help="--torch: op ids to run, comma-separated globs.")
@click.option("--dtypes", default=",".join(TORCH_DTYPES), show_default=True, help="--torch: dtypes.")
@click.option("--budget", type=SECONDS, help="--torch: stop after S seconds.")
@click.option("--samples", type=click.IntRange(1), default=1, show_default=True, help="--torch: per op.")
@click.option("--native", is_flag=True, help="--torch without ZLUDA: a baseline on NVIDIA or native ROCm.")
@pass_invocation
def probe_command(call: Invocation, libcuda: Path | None, torch_level: bool, html_file: Path | None,
                  timeout: float | None, case_ids: tuple[str, ...], device: str, quick: bool, ops: str,
                  dtypes: str, budget: float | None, samples: int, native: bool) -> None:
    """Exit code 0 when everything that ran passed, 3 when a case failed, crashed, hung or was
    missing (torch: an op mismatched or raised), 1 when the probe itself could not run."""
    from zluda_runner.report.probe_view import print_probe, probe_html, progress_line

    keep = results_files(call.options) if html_file else ()
    html = output_path(html_file, keep) if html_file else None
    report = run_probe(call.options, torch=torch_level, quick=quick, device=device, libcuda=libcuda,
                       cases=case_ids, ops=_csv(ops), dtypes=_csv(dtypes), timeout=timeout, budget=budget,
                       native=native, samples=samples, progress=None if call.json else progress_line,
                       on_warning=warn)
    page_error = write_page(html, lambda: probe_html(report), keep)
    if call.json:
        emit_json(report)
    else:
        print_probe(report, html=None if page_error else html)
    if page_error:
        warn(page_error)
    code = ERROR if report.could_not_run else CHECK_FAILED if report.has_problems else OK  # as --help says
    sys.exit(code or (ERROR if page_error else OK))


@command("trace-report")
@click.argument("path", type=GivenPath())
@html_option
@pass_invocation
def trace_report_command(call: Invocation, path: Path, html_file: Path | None) -> None:
    from zluda_runner.report.trace_sections import trace_html
    from zluda_runner.report.trace_view import print_trace_summary

    keep = results_files(call.options) if html_file else ()
    html = output_path(html_file, keep) if html_file else None
    report = read_trace(path)
    if html is not None:
        write_output(html, trace_html(report), keep)
    if call.json:
        emit_json(report)
    else:
        print_trace_summary(report, saved_to=path if path.is_file() else None, err=False, html=html)


COMMANDS: list[click.Command] = [probe_command, trace_report_command]
