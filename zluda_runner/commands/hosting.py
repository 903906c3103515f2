"""doctor / warmup / ab: options -> one library call -> one view -> exit code."""

from __future__ import annotations

import os
import sys

import click

from zluda_runner.abtest.run import run_ab
from zluda_runner.abtest.sides import ab_sides
from zluda_runner.commands.common import emit_json, pass_settings, record, warn
from zluda_runner.core.settings import Settings
from zluda_runner.doctor import DoctorOptions, run_doctor
from zluda_runner.host.fs import ROOT_ENV, root_from_env
from zluda_runner.launch import warmup as warmups
from zluda_runner.launch.run import prepare_run
from zluda_runner.report import ab_view, doctor_view

_WORKLOAD = {"allow_interspersed_args": False}


@click.command("doctor")
@click.option("--root", metavar="DIR", envvar=ROOT_ENV,
              help=f"Read every host file under DIR instead of / (a fake tree; env {ROOT_ENV}). "
              "Skips the HIP runtime, host tools and the torch check.")
@click.option("--strict", is_flag=True, help="Count warnings as failures for the exit code.")
@pass_settings
def doctor_command(settings: Settings, root: str | None, strict: bool) -> None:
    """Check this machine for ZLUDA: GPU, HIP/ROCm, driver, libraries, torch, releases, caches.

    Each check is ok, warn or fail, with a concrete fix. Exit code 0: no check failed
    (warnings allowed); 3: a check failed (with --strict: or warned); 1: the doctor could not run.
    """
    report = run_doctor(DoctorOptions(root=root_from_env(root or ""), settings=settings, strict=strict,
                                      python=settings.python))
    if root is None:  # a fake --root describes no real machine: nothing to remember
        record("doctor", report, settings, ["doctor"])
    emit_json(report) if settings.json else click.echo(doctor_view.render_text(report))
    sys.exit(report.exit_code)


@click.command("warmup", context_settings=_WORKLOAD)
@click.option("--heartbeat", type=float, default=10.0, show_default=True, metavar="SECONDS",
              help="How often to say it is still running.")
@click.option("--as-is", is_flag=True, help="Run COMMAND unchanged (it already runs under ZLUDA).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@pass_settings
def warmup_command(settings: Settings, heartbeat: float, as_is: bool,
                   command: tuple[str, ...]) -> None:
    """Run COMMAND once under ZLUDA to fill its compile cache (first runs compile for minutes).

    The release is fetched and the plan made first (their errors are zluda-run's own), then
    COMMAND runs with a heartbeat of elapsed time and cache growth; exits with COMMAND's code.
    Example: zluda-run warmup -- python examples/infer.py --device cuda
    """
    argv, env = list(command), dict(os.environ)
    if not as_is:
        run = prepare_run(argv, settings, on_warning=warn)
        argv, env = run.argv, run.env
        for warning in run.warnings:
            click.echo(f"warning: {warning}", err=True)
    report = warmups.warmup(argv, env, heartbeat_s=heartbeat,
                            stdout=warmups.stderr_fd() if settings.json else None,
                            on_heartbeat=lambda *beat: click.echo(warmups.heartbeat_text(*beat), err=True))
    emit_json(report) if settings.json else click.echo(warmups.render_text(report, command[0]))
    sys.exit(report.exit_code)


@click.command("ab", context_settings=_WORKLOAD)
@click.option("--runs", type=click.IntRange(1), default=3, show_default=True,
              help="Runs per side (alternating A, B, A, B).")
@click.option("--b-python", metavar="PY", help="Interpreter for side B (a native ROCm torch).")
@click.option("--a-cmd", metavar="CMD", help="Side A command (split like a shell would, never run by one).")
@click.option("--b-cmd", metavar="CMD", help="Side B command.")
@click.option("--timeout", type=float, metavar="SECONDS", help="Stop a run that takes longer.")
@click.option("--rtol", type=float, help="Relative tolerance (default: by dtype).")
@click.option("--atol", type=float, help="Absolute tolerance (default: by dtype).")
@click.option("--html", "html_path", metavar="FILE", help="Also write an HTML report to FILE.")
@click.argument("script", nargs=-1, type=click.UNPROCESSED)
@pass_settings
def ab_command(settings: Settings, runs: int, b_python: str | None, a_cmd: str | None, b_cmd: str | None,
               timeout: float | None, rtol: float | None, atol: float | None,
               html_path: str | None, script: tuple[str, ...]) -> None:
    """Compare SCRIPT under ZLUDA (A) with native ROCm (B), or any two commands.

    \b
    A default: zluda-run run -- <python> SCRIPT ARGS
    B default: <--b-python> SCRIPT ARGS
    The script records outputs and timings with `from zluda_runner import ab`;
    exit code 0 when both sides ran and agree, 3 otherwise.
    """
    a_argv, b_argv = ab_sides(script, a_cmd=a_cmd, b_cmd=b_cmd, b_python=b_python, settings=settings)
    html = ab_view.html_destination(html_path) if html_path else None
    report = run_ab(a_argv, b_argv, runs=runs, timeout=timeout, rtol=rtol, atol=atol,
                    progress=lambda line: click.echo(line, err=True))
    record("ab", report, settings, ["ab", *script])
    if html is not None:
        ab_view.write_html(report, html)
    emit_json(report) if settings.json else click.echo(ab_view.render_text(report))
    sys.exit(report.exit_code)


COMMANDS: list[click.Command] = [doctor_command, warmup_command, ab_command]
