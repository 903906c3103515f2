"""run / plan: options (``--python``, ``--force``, ``--verify-load`` … are global) -> one library
call -> one view -> exit code. Light at import time: a cached launch must start fast."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from zluda_runner.commands.common import emit_json, pass_settings, record, warn
from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.core.settings import Settings

if TYPE_CHECKING:
    from zluda_runner.launch.verify import VerifyResult
    from zluda_runner.plan.model import ShimPlan

_PASSTHROUGH = {"allow_interspersed_args": False}  # options end at the workload's first word


@click.command("run", context_settings=_PASSTHROUGH)
@click.option("--strict", is_flag=True, help="Stop when the host has no AMD GPU driver or HIP runtime.")
@click.option("--injector", is_flag=True,
              help="Windows: start COMMAND through the release's zluda.exe instead of placing DLLs.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@pass_settings
def run_command(settings: Settings, strict: bool, injector: bool, command: tuple[str, ...]) -> None:
    """Run COMMAND under ZLUDA (`zluda-run python infer.py` is the same).

    Checks the host, inspects the interpreter the command runs, picks the ZLUDA release, plans every
    binding, refuses when a verdict is fatal (--force to go on), then runs COMMAND with its
    arguments untouched; its exit code is passed back.
    """
    from zluda_runner.launch.run import prepare_run, start

    run = prepare_run(list(command), settings, injector=injector, strict=strict, on_warning=warn)
    for line in [*(f"warning: {w}" for w in run.warnings), *(f"results store: {n}" for n in run.notes)]:
        click.echo(line, err=True)
    if settings.trace:
        sys.exit(_traced(run.plan, run.argv, settings))
    if settings.verify_load:
        from zluda_runner.launch.prepare import expected_bindings
        from zluda_runner.launch.verify import render, verify_bindings

        result = verify_bindings(run.argv, run.env, expected_bindings(run.plan))
        _record_verification(run.plan, result, settings, ["--verify-load", *run.argv])
        emit_json({"verify_load": result}) if settings.json else click.echo(render(result), err=True)
        sys.exit(result.command_exit_code())
    sys.exit(start(run))


def _record_verification(plan: ShimPlan, result: VerifyResult, settings: Settings, argv: list[str]) -> None:
    release, target = plan.refs()
    record("verify-load", result, settings, argv, release=release, target=target)


def _traced(plan: ShimPlan, argv: list[str], settings: Settings) -> int:
    from zluda_runner.report.trace_view import print_trace_summary
    from zluda_runner.trace.workload import trace_workload

    traced = trace_workload(plan, argv, settings)
    release, target = plan.refs()
    record("trace", traced.report, settings, ["--trace", *argv], release=release, target=target)
    print_trace_summary(traced.report, saved_to=traced.saved_to)
    return traced.exit_code


@click.command("plan", context_settings=_PASSTHROUGH)
@click.option("--no-cache", is_flag=True, help="Recompute the plan even if a cached one is valid.")
@click.option("--torch-lib", metavar="DIR", help="Plan for this (Windows) torch/lib folder, from any host.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@pass_settings
def plan_command(settings: Settings, no_cache: bool, torch_lib: str | None, command: tuple[str, ...]) -> None:
    """Show what `zluda-run -- COMMAND` would do, and whether each library will bind (no download).

    With --verify-load, also run `python -c "import torch"` under the plan and report
    the file the loader really took for every planned binding.
    """
    from zluda_runner.launch.prepare import prepare_plan
    from zluda_runner.launch.run import plan_argv

    argv = plan_argv(command, settings, check_host=not torch_lib)
    if torch_lib:
        from zluda_runner.launch.windows import plan_for_torch_lib

        plan = plan_for_torch_lib(Path(torch_lib), settings, argv=argv)
    else:
        plan = prepare_plan(argv, settings, use_cache=not no_cache, download=False)
    verification = None
    if settings.verify_load:
        from zluda_runner.launch.verify import verify_torch_import

        verification = verify_torch_import(plan, settings.cache_dir)
        _record_verification(plan, verification, settings, ["plan", "--verify-load"])
    if settings.json:
        emit_json(plan.to_dict() | ({"verify_load": verification.to_dict()} if verification else {}))
    else:
        from zluda_runner.launch.verify import render
        from zluda_runner.report.plan_view import print_plan

        print_plan(plan)
        if verification is not None:
            click.echo(render(verification), err=True)
    if plan.fatal or (verification is not None and verification.failed):
        sys.exit(CHECK_FAILED)


COMMANDS: list[click.Command] = [run_command, plan_command]
