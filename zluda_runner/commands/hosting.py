"""doctor / warmup / ab commands, and ``compile_cache_command`` (attached as ``cache compile``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from zluda_runner.abtest.runner import (
    default_side_a,
    default_side_b,
    render_html,
    render_text,
    run_ab,
    split_command,
)
from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.errors import HostError
from zluda_runner.core.settings import Settings
from zluda_runner.core.units import format_bytes
from zluda_runner.doctor import EXIT_FAILED, ROOT_ENV, DoctorOptions, root_from_env, run_doctor
from zluda_runner.doctor import render_text as render_doctor
from zluda_runner.host.compile_cache import clean_compile_cache, inspect_compile_cache
from zluda_runner.launch.warmup import HEARTBEAT_S, warmup, zluda_run_argv

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
    options = DoctorOptions(
        root=root_from_env(root or ""), settings=settings, strict=strict, python=settings.python
    )
    report = run_doctor(options)
    if want_json(settings, as_json):
        emit_json(report)
    else:
        click.echo(render_doctor(report))
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
    workload = list(command[1:] if command and command[0] == "--" else command)
    if not workload:
        raise HostError("no workload command given", hint="zluda-run warmup -- python infer.py")
    argv = workload if as_is else zluda_run_argv(workload, settings)
    json_mode = want_json(settings, as_json)

    def beat(elapsed: float, cache_bytes: int, grown: int) -> None:
        click.echo(
            f"warmup: still running after {elapsed:.0f} s; compile cache +{format_bytes(max(grown, 0))} "
            f"so far, now {format_bytes(cache_bytes)} (a first run compiles GPU code, this can take minutes)",
            err=True,
        )

    stdout = None
    if json_mode:
        try:
            stdout = sys.stderr.fileno()  # keep stdout for the JSON
        except (AttributeError, OSError, ValueError):
            stdout = None
    report = warmup(argv, dict(os.environ), heartbeat_s=heartbeat, on_heartbeat=beat, stdout=stdout)
    if json_mode:
        emit_json(report.to_dict())
    else:
        click.echo(
            f"warmup: {workload[0]} exited {report.exit_code} after {report.elapsed_s:.1f} s; compile cache "
            f"grew by {format_bytes(max(report.grew_bytes, 0))} ({report.grew_files:+d} files), now "
            f"{format_bytes(report.bytes_after)}"
        )
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
    args = list(script[1:] if script and script[0] == "--" else script)
    if a_cmd:
        a_argv = split_command(a_cmd) + args
    elif args:
        a_argv = default_side_a(args, settings=settings)
    else:
        raise HostError("nothing to run on side A", hint="give a SCRIPT after --, or --a-cmd")
    if b_cmd:
        b_argv = split_command(b_cmd) + args
    elif b_python and args:
        b_argv = default_side_b(args, b_python)
    elif b_python:
        raise HostError(
            "--b-python needs a SCRIPT to run", hint="zluda-run ab --b-python PY -- SCRIPT [ARGS]"
        )
    else:
        raise HostError(
            "nothing to run on side B", hint="give --b-python PY (a native ROCm python) or --b-cmd"
        )
    if html_path and not Path(html_path).expanduser().resolve().parent.is_dir():
        raise HostError(
            f"cannot write the HTML report to {html_path}: its folder does not exist",
            hint="give --html a path in an existing folder",
        )
    json_mode = want_json(settings, as_json)
    report = run_ab(
        a_argv,
        b_argv,
        runs=runs,
        timeout=timeout,
        rtol=rtol,
        atol=atol,
        progress=lambda line: click.echo(line, err=True),
    )
    if html_path:
        try:
            Path(html_path).expanduser().write_text(render_html(report), encoding="utf-8")
        except OSError as exc:
            raise HostError(
                f"cannot write the HTML report to {html_path}: {exc.strerror or exc}",
                hint="give --html a writable file path",
            ) from None
    if json_mode:
        emit_json(report)
    else:
        click.echo(render_text(report))
    ok = report.agree is True and not report.problems
    sys.exit(0 if ok else EXIT_FAILED)


@click.command("compile")
@click.option("--clean", is_flag=True, help="Delete ZLUDA's compile cache databases (zluda*.db*).")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@pass_settings
def compile_cache_command(settings: Settings, clean: bool, as_json: bool) -> None:
    """Show (or --clean) ZLUDA's compile cache: <user cache>/ZLUDA|zluda/ComputeCache/zluda*.db."""
    json_mode = want_json(settings, as_json)
    if clean:
        result = clean_compile_cache()
        if json_mode:
            emit_json(result)
        else:
            click.echo(f"removed {len(result.removed)} file(s), freed {format_bytes(result.freed_bytes)}")
            for failure in result.failed:
                click.echo(f"could not remove {failure}", err=True)
        if result.failed:
            sys.exit(1)
        return
    info = inspect_compile_cache()
    if json_mode:
        emit_json(info)
        return
    for folder in info.dirs:
        click.echo(f"{folder}{'' if folder.is_dir() else ' (absent)'}")
    for entry in info.files:
        click.echo(f"  {entry.path.name}  {format_bytes(entry.bytes)}")
    click.echo(f"total: {info.file_count} file(s), {format_bytes(info.total_bytes)}")


COMMANDS: list[click.Command] = [doctor_command, warmup_command, ab_command]
