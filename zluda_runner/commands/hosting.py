"""doctor / warmup / ab: options -> one API call -> one view -> exit code."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zluda_runner.api.checking import run_doctor
from zluda_runner.api.store import output_path, results_files
from zluda_runner.api.terms import FAKE_ROOT_ENV
from zluda_runner.api.workloads import run_ab, warmup
from zluda_runner.commands import command
from zluda_runner.commands.common import (
    NOT_NEGATIVE,
    RUNS,
    SECONDS,
    GivenPath,
    Invocation,
    emit_json,
    pass_invocation,
    warn,
    write_page,
)
from zluda_runner.core.exitcodes import ERROR, OK
from zluda_runner.report import ab_view, doctor_view
from zluda_runner.report.terminal import page_written, say

_WORKLOAD = {"allow_interspersed_args": False}


@command("doctor")
@click.option("--root", metavar="DIR", envvar=FAKE_ROOT_ENV,
              help=f"Read every host file under DIR instead of / (a fake tree; env {FAKE_ROOT_ENV}). "
              "Skips the HIP runtime, host tools and the torch check.")
@click.option("--strict", is_flag=True, help="Count warnings as failures for the exit code.")
@pass_invocation
def doctor_command(call: Invocation, root: str | None, strict: bool) -> None:
    """Each check is ok, warn or fail, with a concrete fix. Exit code 0: no check failed
    (warnings allowed); 3: a check failed (with --strict: or warned); 1: the doctor could not run.
    """
    # a fake --root describes no real machine: run_doctor records nothing then
    report = run_doctor(call.options, strict=strict, root=root, on_warning=warn)
    emit_json(report) if call.json else say([doctor_view.render_text(report)])
    sys.exit(report.exit_code)


@command("warmup", _WORKLOAD)
@click.option("--heartbeat", type=SECONDS, default=10.0, show_default=True, metavar="SECONDS",
              help="How often to say it is still running.")
@click.option("--as-is", is_flag=True, help="Run COMMAND unchanged (it already runs under ZLUDA).")
@click.option("--no-precompile", is_flag=True,
              help="Run COMMAND even where the release ships its own zluda_precompile.")
@click.option("--clear-caches", is_flag=True,
              help="First remove ZLUDA's compile cache and MIOpen's user caches (each file listed).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@pass_invocation
def warmup_command(call: Invocation, heartbeat: float, as_is: bool, no_precompile: bool, clear_caches: bool,
                   command: tuple[str, ...]) -> None:
    """The release is fetched and the plan made first (their errors are zluda-run's own), then
    COMMAND runs with a heartbeat of elapsed time and cache growth; exits with COMMAND's code.
    Where the release ships zluda_precompile (upstream v6+), that compiles the target's CUDA
    binaries instead, and COMMAND runs only if it fails.
    Example: zluda-run warmup -- python examples/infer.py --device cuda
    """
    from zluda_runner.report.warmup_view import render_warmup, warmup_heartbeat

    report = warmup(command, call.options, heartbeat=heartbeat, as_is=as_is, output_to_stderr=call.json,
                    on_heartbeat=lambda *beat: click.echo(warmup_heartbeat(*beat), err=True), on_warning=warn,
                    precompile=not no_precompile, clear_caches=clear_caches)
    emit_json(report) if call.json else say([render_warmup(report, command[0])])
    sys.exit(report.exit_code)


@command("ab", _WORKLOAD)
@click.option("--runs", type=RUNS, default=3, show_default=True,
              help="Runs per side (alternating A, B, A, B).")
@click.option("--b-python", metavar="PY", help="Interpreter for side B (a native ROCm torch).")
@click.option("--a-cmd", metavar="CMD", help="Side A command (split like a shell would, never run by one).")
@click.option("--b-cmd", metavar="CMD", help="Side B command.")
@click.option("--timeout", type=SECONDS, metavar="SECONDS", help="Stop a run that takes longer.")
@click.option("--rtol", type=NOT_NEGATIVE, help="Relative tolerance (default: by dtype).")
@click.option("--atol", type=NOT_NEGATIVE, help="Absolute tolerance (default: by dtype).")
@click.option("--html", "html_path", type=GivenPath(), metavar="FILE",
              help="Also write an HTML report to FILE.")
@click.argument("script", nargs=-1, type=click.UNPROCESSED)
@pass_invocation
def ab_command(call: Invocation, runs: int, b_python: str | None, a_cmd: str | None, b_cmd: str | None,
               timeout: float | None, rtol: float | None, atol: float | None,
               html_path: Path | None, script: tuple[str, ...]) -> None:
    """\b
    A default: zluda-run run -- <python> SCRIPT ARGS
    B default: <--b-python> SCRIPT ARGS
    The script records outputs and timings with `from zluda_runner import ab`;
    exit code 0 when both sides ran and agree, 3 otherwise.
    """
    keep = results_files(call.options) if html_path else ()
    html = output_path(html_path, keep) if html_path else None
    report = run_ab(script, call.options, runs=runs, b_python=b_python, a_command=a_cmd, b_command=b_cmd,
                    timeout=timeout, rtol=rtol, atol=atol, progress=lambda line: click.echo(line, err=True),
                    on_warning=warn)
    page_error = write_page(html, lambda: ab_view.render_html(report), keep)
    written = [page_written(html)] if html is not None and not page_error else []
    emit_json(report) if call.json else say([ab_view.render_text(report), *written])
    if page_error:
        warn(page_error)
    sys.exit(report.exit_code or (ERROR if page_error else OK))


COMMANDS: list[click.Command] = [doctor_command, warmup_command, ab_command]
