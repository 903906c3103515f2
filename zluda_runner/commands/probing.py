"""``zluda-run probe`` (driver API / torch ops coverage) and ``zluda-run trace-report``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, html_option, pass_settings, record
from zluda_runner.core.exitcodes import CHECK_FAILED, ERROR, OK
from zluda_runner.core.settings import Settings
from zluda_runner.probe.opinfo_probe import DEFAULT_DTYPES
from zluda_runner.probe.session import csv_list


@click.command("probe")
@click.option("--libcuda", type=click.Path(path_type=Path), help="The libcuda to probe (default: ZLUDA's).")
@click.option("--torch", "torch_level", is_flag=True, help="Probe torch ops in the target interpreter.")
@html_option
@click.option("--timeout", type=float, help="Seconds per case (torch: per op; --quick: whole run).")
@click.option("--case", "case_ids", multiple=True, help="Run only this case (repeatable).")
@click.option("--device", default="cuda", help="torch device; cpu compares CPU results with float64.")
@click.option("--quick", is_flag=True, help="--torch: the 12 hand-written smoke ops instead of OpInfo.")
@click.option("--ops", default="", help="--torch: op ids to run, comma-separated globs.")
@click.option("--dtypes", default=",".join(DEFAULT_DTYPES), show_default=True, help="--torch: dtypes.")
@click.option("--budget", type=float, help="--torch: stop after S seconds.")
@click.option("--samples", type=click.IntRange(1), default=1, show_default=True, help="--torch: per op.")
@click.option("--native", is_flag=True, help="--torch without ZLUDA: a baseline on NVIDIA or native ROCm.")
@pass_settings
def probe_command(settings: Settings, libcuda: Path | None, torch_level: bool, html_file: Path | None,
                  timeout: float | None, case_ids: tuple[str, ...], device: str, quick: bool, ops: str,
                  dtypes: str, budget: float | None, samples: int, native: bool) -> None:
    """Which CUDA calls (or torch ops) work here? Pass / fail / missing / crashed per case.

    Exit code 0 when everything that ran passed, 3 when a case failed, crashed, hung or was
    missing (torch: an op mismatched or raised), 1 when the probe itself could not run."""
    from zluda_runner.probe.session import ProbeRequest, run_requested_probe
    from zluda_runner.report.files import destination, write_report
    from zluda_runner.report.probe_view import print_probe, probe_html, progress_line

    html = destination(html_file) if html_file else None
    request = ProbeRequest(libcuda=libcuda, torch=torch_level, device=device, native=native, quick=quick,
                           ops=csv_list(ops), dtypes=csv_list(dtypes), budget=budget, samples=samples,
                           timeout=timeout, case_ids=list(case_ids))
    quiet = settings.json
    report = run_requested_probe(request, settings, progress=None if quiet else progress_line)
    record("torch-ops" if torch_level else "probe", report, settings, ["probe", *sys.argv[2:]])
    if html is not None:
        write_report(html, probe_html(report))
    if quiet:
        emit_json(report)
    else:
        print_probe(report, html=html)
    sys.exit(ERROR if report.could_not_run else CHECK_FAILED if report.has_problems else OK)  # as --help says


@click.command("trace-report")
@click.argument("path", type=click.Path(path_type=Path))
@html_option
@pass_settings
def trace_report_command(settings: Settings, path: Path, html_file: Path | None) -> None:
    """Show a saved trace (JSON from --trace-out, or a folder of raw trace files)."""
    from zluda_runner.report.files import destination, write_report
    from zluda_runner.report.trace_sections import trace_html
    from zluda_runner.report.trace_view import print_trace_summary
    from zluda_runner.trace.run import load_trace

    html = destination(html_file) if html_file else None
    report = load_trace(path)
    if html is not None:
        write_report(html, trace_html(report))
    if settings.json:
        emit_json(report)
    else:
        from zluda_runner.report.terminal import make_console

        print_trace_summary(report, saved_to=path if path.is_file() else None, console=make_console())


COMMANDS: list[click.Command] = [probe_command, trace_report_command]
