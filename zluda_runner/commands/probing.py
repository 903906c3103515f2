"""``zluda-run probe`` (driver API / torch ops coverage) and ``zluda-run trace-report``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.errors import ProbeError, TraceError
from zluda_runner.core.settings import Settings
from zluda_runner.probe.model import UNAVAILABLE, CaseResult, ProbeReport
from zluda_runner.probe.opinfo_probe import DEFAULT_DTYPES, DEFAULT_OP_TIMEOUT, run_opinfo_probe
from zluda_runner.probe.runner import DEFAULT_TIMEOUT, run_probe
from zluda_runner.probe.torch_probe import DEFAULT_TORCH_TIMEOUT, run_torch_probe
from zluda_runner.report.views import probe_html, probe_markdown, trace_html, trace_markdown
from zluda_runner.trace.model import TraceReport
from zluda_runner.trace.run import read_trace_dir

LIBCUDA_NAMES = ("libcuda.so.1", "libcuda.so")
EXIT_PROBLEMS = 3  # a case failed, crashed, hung or was missing (torch: mismatch or error too)


def find_probe_libcuda(settings: Settings, *, trust_on_first_use: bool = False) -> Path:
    """The libcuda to probe when none is given: ZLUDA's driver from ``--zluda-dir`` (not its trace/
    copy), else from the manifest release that fits this host (fetched into the cache)."""
    if settings.zluda_dir is not None and settings.zluda_dir.name in ("trace", "trace_nvidia"):
        parent = settings.zluda_dir.parent
        for name in LIBCUDA_NAMES:
            if (parent / name).is_file():
                return parent / name
    from zluda_runner.launch.prepare import release_for
    from zluda_runner.release.selection import host_os

    source = release_for(
        settings, os_name=host_os() or sys.platform, cuda_major=None, trust_on_first_use=trust_on_first_use
    )
    drivers = [s for s in source.layout.for_family("driver") if not s.path.lower().endswith(".dll")]
    if not drivers:
        raise ProbeError(
            f"no libcuda.so.1 in {source.layout.root}",
            hint="point --zluda-dir at an unpacked Linux ZLUDA, or pass --libcuda PATH",
        )
    return Path(drivers[0].path)


def zluda_env_for(python: str, settings: Settings, *, trust_on_first_use: bool = False) -> dict[str, str]:
    """The environment ``zluda-run`` gives ``python``: the plan's loader set-up (refused if fatal)."""
    from zluda_runner.launch.prepare import launch_env, prepare_plan, refuse_if_fatal

    plan = prepare_plan([python], settings, trust_on_first_use=trust_on_first_use)
    refuse_if_fatal(plan, settings.force)
    return launch_env(plan, settings.cache_dir)


def _progress(result: CaseResult) -> None:
    click.echo(f"  {result.status:8} {result.id}", err=True)


def _write_html(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ProbeError(
            f"cannot write the HTML report to {path}: {exc.strerror or exc}",
            hint="pass --html a path in a folder you can write to",
        ) from exc
    click.echo(f"HTML report written to {path}", err=True)


@click.command("probe")
@click.option("--libcuda", type=click.Path(path_type=Path), help="The libcuda to probe (default: ZLUDA's).")
@click.option(
    "--torch", "torch_level", is_flag=True, help="Probe torch ops in the target interpreter instead."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--html", "html_file", type=click.Path(path_type=Path), help="Also write a self-contained HTML page."
)
@click.option(
    "--timeout", type=float, default=None, help="Seconds per case (torch: per op; --quick: whole run)."
)
@click.option("--case", "case_ids", multiple=True, help="Run only this case (repeatable).")
@click.option(
    "--device", default="cuda", help="torch device; cpu compares CPU results with float64 (a self-check)."
)
@click.option("--quick", is_flag=True, help="--torch: the 12 hand-written smoke ops instead of OpInfo.")
@click.option("--ops", "op_patterns", default="", help="--torch: op ids to run, comma-separated globs.")
@click.option(
    "--dtypes", default=",".join(DEFAULT_DTYPES), show_default=True, help="--torch: dtypes to compare."
)
@click.option("--budget", type=float, default=None, help="--torch: stop after S seconds.")
@click.option("--samples", type=int, default=1, show_default=True, help="--torch: sample inputs per op.")
@click.option(
    "--native", is_flag=True,
    help="--torch without ZLUDA: the interpreter as it is (a baseline on NVIDIA or native ROCm).",
)
@click.option("--trust-on-first-use", is_flag=True, help="Accept a release whose SHA-256 is not published.")
@pass_settings
def probe_command(
    settings: Settings,
    libcuda: Path | None,
    torch_level: bool,
    as_json: bool,
    html_file: Path | None,
    timeout: float | None,
    case_ids: tuple[str, ...],
    device: str,
    native: bool,
    trust_on_first_use: bool,
    quick: bool,
    op_patterns: str,
    dtypes: str,
    budget: float | None,
    samples: int,
) -> None:
    """Which CUDA calls (or torch ops) work here? Pass / fail / missing / crashed per case.

    Exit code 0 when everything that ran passed, 3 when a case failed, crashed, hung or was
    missing (torch: an op mismatched or raised), 1 when the probe itself could not run."""
    quiet = want_json(settings, as_json)
    report: ProbeReport
    if torch_level:
        python = settings.python or sys.executable
        if native or device == "cpu":
            env = dict(os.environ)
        else:
            env = zluda_env_for(python, settings, trust_on_first_use=trust_on_first_use)
        if quick:
            report = run_torch_probe(python, env, device=device, timeout=timeout or DEFAULT_TORCH_TIMEOUT)
        else:
            report = run_opinfo_probe(
                python,
                env,
                device=device,
                dtypes=[d.strip() for d in dtypes.split(",") if d.strip()],
                ops=[p.strip() for p in op_patterns.split(",") if p.strip()],
                samples=samples,
                budget=budget,
                op_timeout=timeout or DEFAULT_OP_TIMEOUT,
                progress=None if quiet else _progress,
            )
    else:
        target = libcuda if libcuda is not None else find_probe_libcuda(
            settings, trust_on_first_use=trust_on_first_use
        )
        report = run_probe(
            target,
            timeout=timeout or DEFAULT_TIMEOUT,
            case_ids=case_ids or None,
            progress=None if quiet else _progress,
        )
    if html_file is not None:
        _write_html(html_file, probe_html(report))
    if quiet:
        emit_json(report)
    else:
        click.echo(probe_markdown(report))
        if report.load is not None and report.load.status == UNAVAILABLE and "OpInfo" in report.load.detail:
            click.echo("hint: pip install numpy expecttest in that interpreter, or use --quick", err=True)
    if report.has_problems:
        sys.exit(EXIT_PROBLEMS)


def load_trace(path: Path) -> TraceReport:
    """A saved TraceReport (JSON file) or a folder of raw logs/count files."""
    if path.is_dir():
        return read_trace_dir(path)
    try:
        return TraceReport.from_json(path.read_text())
    except FileNotFoundError as exc:
        raise TraceError(
            f"{path} does not exist", hint="pass a trace JSON file or a raw trace folder"
        ) from exc
    except (OSError, ValueError, TypeError) as exc:
        raise TraceError(
            f"{path} is not a trace report: {exc}",
            hint="pass the file written by --trace-out, or the raw trace folder",
        ) from exc


@click.command("trace-report")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--html", "html_file", type=click.Path(path_type=Path), help="Write a self-contained HTML page."
)
@pass_settings
def trace_report_command(settings: Settings, path: Path, as_json: bool, html_file: Path | None) -> None:
    """Show a saved trace (JSON from --trace-out, or a folder of raw trace files)."""
    report = load_trace(path)
    if html_file is not None:
        _write_html(html_file, trace_html(report))
    if want_json(settings, as_json):
        emit_json(report)
    else:
        click.echo(trace_markdown(report))


COMMANDS: list[click.Command] = [probe_command, trace_report_command]

__all__ = ["COMMANDS", "find_probe_libcuda", "load_trace"]
