"""doctor / warmup / ab commands, and ``compile_cache_command`` (attached as ``cache compile``).

Each command: parse options -> one library call -> one view -> exit code.  The doctor and
the A/B runner are imported inside their commands: ``zluda-run cache`` loads this module
(for ``cache compile``) and must not pay for them.
"""

from __future__ import annotations

import os
import sys

import click

from zluda_runner.commands.common import emit_json, pass_settings, record, want_json
from zluda_runner.core.settings import Settings
from zluda_runner.host.compile_cache import (
    clean_compile_cache,
    inspect_compile_cache,
    render_clean_text,
)
from zluda_runner.host.compile_cache import render_text as render_compile_cache
from zluda_runner.host.fs import ROOT_ENV, root_from_env
from zluda_runner.launch.warmup import HEARTBEAT_S, heartbeat_text, warmup, workload_argv
from zluda_runner.launch.warmup import render_text as render_warmup

_WORKLOAD = {"ignore_unknown_options": True, "allow_interspersed_args": False}


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--root",
    metavar="DIR",
    envvar=ROOT_ENV,
    help=f"Read every host file under DIR instead of / (a fake tree; env {ROOT_ENV}). "
    "Skips the HIP runtime, host tools and the torch check.",
)
@click.option("--strict", is_flag=True, help="Count warnings as failures for the exit code.")
@pass_settings
def doctor_command(settings: Settings, as_json: bool, root: str | None, strict: bool) -> None:
    """Check this machine for ZLUDA: GPU, HIP/ROCm, driver, libraries, torch, releases, caches.

    Each check is ok, warn or fail, with a concrete fix.

    \b
    Exit code: 0  no check failed (warnings allowed)
               3  at least one check failed (with --strict: or warned)
               1  the doctor itself could not run (e.g. --root is not a folder)
    """
    from zluda_runner.doctor import DoctorOptions, run_doctor
    from zluda_runner.report.doctor_view import render_text

    options = DoctorOptions(
        root=root_from_env(root or ""), settings=settings, strict=strict, python=settings.python
    )
    report = run_doctor(options)
    if root is None:  # a fake --root describes no real machine: nothing to remember
        record("doctor", report, settings, ["doctor"])
    if want_json(settings, as_json):
        emit_json(report)
    else:
        click.echo(render_text(report))
    sys.exit(report.exit_code)


@click.command("warmup", context_settings=_WORKLOAD)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the report as JSON (workload output goes to stderr)."
)
@click.option(
    "--heartbeat",
    type=float,
    default=HEARTBEAT_S,
    show_default=True,
    metavar="SECONDS",
    help="How often to say it is still running.",
)
@click.option(
    "--as-is",
    is_flag=True,
    help="Run COMMAND unchanged (it already runs under ZLUDA) instead of through `zluda-run run`.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@pass_settings
def warmup_command(
    settings: Settings, as_json: bool, heartbeat: float, as_is: bool, command: tuple[str, ...]
) -> None:
    """Run COMMAND once under ZLUDA to fill its compile cache (first runs compile for minutes).

    COMMAND runs as `zluda-run run -- COMMAND` (with this command's global options), or
    unchanged with --as-is.  Prints a heartbeat with elapsed time and cache growth, then
    the totals; exits with COMMAND's exit code.
    Example: zluda-run warmup -- python examples/infer.py --device cuda
    """
    argv = workload_argv(command, settings, as_is=as_is)
    json_mode = want_json(settings, as_json)
    stdout = None
    if json_mode:
        try:
            stdout = sys.stderr.fileno()  # keep stdout for the JSON
        except (AttributeError, OSError, ValueError):
            stdout = None
    report = warmup(
        argv,
        dict(os.environ),
        heartbeat_s=heartbeat,
        on_heartbeat=lambda *beat: click.echo(heartbeat_text(*beat), err=True),
        stdout=stdout,
    )
    if json_mode:
        emit_json(report.to_dict())
    else:
        click.echo(render_warmup(report, command[1] if command[0] == "--" else command[0]))
    sys.exit(report.exit_code)


@click.command("ab", context_settings=_WORKLOAD)
@click.option(
    "--runs", type=int, default=3, show_default=True, help="Runs per side (alternating A, B, A, B)."
)
@click.option("--b-python", metavar="PY", help="Interpreter for side B (a native ROCm torch).")
@click.option("--a-cmd", metavar="CMD", help="Side A command (split like a shell would, never run by one).")
@click.option("--b-cmd", metavar="CMD", help="Side B command.")
@click.option("--timeout", type=float, metavar="SECONDS", help="Stop a run that takes longer.")
@click.option("--rtol", type=float, help="Relative tolerance (default: by dtype).")
@click.option("--atol", type=float, help="Absolute tolerance (default: by dtype).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--html", "html_path", metavar="FILE", help="Also write an HTML report to FILE.")
@click.argument("script", nargs=-1, type=click.UNPROCESSED)
@pass_settings
def ab_command(
    settings: Settings,
    runs: int,
    b_python: str | None,
    a_cmd: str | None,
    b_cmd: str | None,
    timeout: float | None,
    rtol: float | None,
    atol: float | None,
    as_json: bool,
    html_path: str | None,
    script: tuple[str, ...],
) -> None:
    """Compare SCRIPT under ZLUDA (A) with native ROCm (B), or any two commands.

    \b
    A default: zluda-run run -- <python> SCRIPT ARGS
    B default: <--b-python> SCRIPT ARGS
    The script records outputs and timings with `from zluda_runner import ab`;
    exit code 0 when both sides ran and agree, 3 otherwise.
    """
    from zluda_runner.abtest.run import run_ab
    from zluda_runner.abtest.sides import ab_sides
    from zluda_runner.report.ab_view import html_destination, render_text, write_html

    a_argv, b_argv = ab_sides(script, a_cmd=a_cmd, b_cmd=b_cmd, b_python=b_python, settings=settings)
    html = html_destination(html_path) if html_path else None
    report = run_ab(
        a_argv,
        b_argv,
        runs=runs,
        timeout=timeout,
        rtol=rtol,
        atol=atol,
        progress=lambda line: click.echo(line, err=True),
    )
    record("ab", report, settings, ["ab", *script])
    if html is not None:
        write_html(report, html)
    if want_json(settings, as_json):
        emit_json(report)
    else:
        click.echo(render_text(report))
    sys.exit(report.exit_code)


@click.command("compile")
@click.option("--clean", is_flag=True, help="Delete ZLUDA's compile cache databases (zluda*.db*).")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@pass_settings
def compile_cache_command(settings: Settings, clean: bool, as_json: bool) -> None:
    """Show (or --clean) ZLUDA's compile cache: <user cache>/ZLUDA|zluda/ComputeCache/zluda*.db."""
    json_mode = want_json(settings, as_json)
    if not clean:
        info = inspect_compile_cache()
        if json_mode:
            emit_json(info)
        else:
            click.echo(render_compile_cache(info))
        return
    result = clean_compile_cache()
    if json_mode:
        emit_json(result)
    else:
        click.echo(render_clean_text(result))
        for failure in result.failed:
            click.echo(f"could not remove {failure}", err=True)
    sys.exit(result.exit_code)


COMMANDS: list[click.Command] = [doctor_command, warmup_command, ab_command]
