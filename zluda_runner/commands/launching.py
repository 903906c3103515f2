"""run / plan: options (``--python``, ``--force``, ``--verify-load`` … are global) -> one API call
-> one view -> exit code. Light at import time: a cached launch must start fast."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from zluda_runner.api.evidence import trace_launch, verify_launch, verify_plan
from zluda_runner.api.launching import plan_command as make_plan
from zluda_runner.api.launching import start
from zluda_runner.commands import command
from zluda_runner.commands.common import GivenPath, Invocation, emit_json, pass_invocation
from zluda_runner.commands.workload import prepared, say_err, warn
from zluda_runner.core.exitcodes import CHECK_FAILED

if TYPE_CHECKING:
    from zluda_runner.api.evidence import Telemetry

_PASSTHROUGH = {"allow_interspersed_args": False}  # options end at the workload's first word


@command("run", _PASSTHROUGH)
@click.option("--strict", is_flag=True, help="Stop when the host has no AMD GPU driver or HIP runtime.")
@click.option("--injector", is_flag=True,
              help="Windows: start COMMAND through the release's zluda.exe instead of placing DLLs.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@pass_invocation
def run_command(call: Invocation, strict: bool, injector: bool, command: tuple[str, ...]) -> None:
    """Checks the host, inspects the interpreter the command runs, picks the ZLUDA release, plans every
    binding, refuses when a verdict is fatal (--force to go on), then runs COMMAND with its
    arguments untouched; its exit code is passed back.
    """
    launch = prepared(command, call.options, injector=injector, strict=strict, verify_load=call.verify_load)
    heard: list[str] = []  # --monitor: its one line comes last, after the path's own view
    on_telemetry = _monitor(call, heard)
    if call.trace:
        from zluda_runner.report.trace_view import print_trace_summary

        traced = trace_launch(launch, call.options, out=call.trace_out, on_warning=warn,
                              on_telemetry=on_telemetry)
        print_trace_summary(traced.report, saved_to=traced.saved_to)
        _gpu_line(heard)
        sys.exit(traced.exit_code)
    if call.verify_load:
        from zluda_runner.report.terminal import say
        from zluda_runner.report.verify_view import render_verification

        result = verify_launch(launch, call.options, on_warning=warn, on_telemetry=on_telemetry)
        emit_json({"verify_load": result}) if call.json else say([render_verification(result)], err=True)
        _gpu_line(heard)
        sys.exit(result.command_exit_code())
    if on_telemetry is not None:
        code = start(launch, on_telemetry=on_telemetry)
        _gpu_line(heard)
        sys.exit(code)
    sys.exit(start(launch, replace=True))


def _monitor(call: Invocation, heard: list[str]) -> Telemetry | None:
    """With ``--monitor``: what hears the GPU trace (or why there is none) and keeps its view."""
    if not call.options.monitor:
        return None
    from zluda_runner.report.telemetry_view import render_monitor

    return lambda trace: heard.append(render_monitor(trace))


def _gpu_line(heard: list[str]) -> None:
    """``--monitor``'s line (and its idle warning) on stderr, whichever way the workload ran."""
    for text in heard:
        say_err(text)


@command("plan", _PASSTHROUGH)
@click.option("--no-cache", is_flag=True, help="Recompute the plan even if a cached one is valid.")
@click.option("--torch-lib", type=GivenPath(), metavar="DIR",
              help="Plan for this (Windows) torch/lib folder, from any host.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@pass_invocation
def plan_command(call: Invocation, no_cache: bool, torch_lib: Path | None, command: tuple[str, ...]) -> None:
    """With --verify-load, also run `python -c "import torch"` under the plan and report
    the file the loader really took for every planned binding.
    """
    plan = make_plan(command, call.options, torch_lib=torch_lib or None, use_cache=not no_cache)
    verification = verify_plan(plan, call.options, on_warning=warn) if call.verify_load else None
    if call.json:
        emit_json(plan.to_dict() | ({"verify_load": verification.to_dict()} if verification else {}))
    else:
        from zluda_runner.report.plan_view import print_plan

        print_plan(plan)
        if verification is not None:
            from zluda_runner.report.terminal import say
            from zluda_runner.report.verify_view import render_verification

            say([render_verification(verification)], err=True)
    if plan.fatal or (verification is not None and verification.failed):
        sys.exit(CHECK_FAILED)


COMMANDS: list[click.Command] = [run_command, plan_command]
