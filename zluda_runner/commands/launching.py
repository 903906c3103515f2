"""run / plan: options -> one library call -> one view -> exit code.

Kept light at import time: ``zluda-run python infer.py`` with a cached plan
must add little to the workload's start (benchmarks/launch_overhead.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from zluda_runner.commands.common import emit_json, pass_settings, plan_refs, record, want_json
from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.core.settings import Settings

if TYPE_CHECKING:
    from zluda_runner.plan.model import ShimPlan

# Options end at the workload's first word: everything after it is the workload's own.
_PASSTHROUGH = {"allow_interspersed_args": False}


def _run_options(func: Callable[..., None]) -> Callable[..., None]:
    """Options that may also be given before the command word (``zluda-run --force -- CMD``)."""
    func = click.option("--python", "python_opt", metavar="PY", help="Target interpreter.")(func)
    func = click.option("--force", "force_opt", is_flag=True, help="Run even when a verdict is fatal.")(func)
    func = click.option("--verify-load", "verify_opt", is_flag=True,
                        help="Run under LD_DEBUG and prove which file each library bound to.")(func)
    func = click.option("--trust-on-first-use", is_flag=True,
                        help="Accept a release whose SHA-256 is not published (recorded on first use).")(func)
    return func


def _merge(settings: Settings, python_opt: str | None, force_opt: bool, verify_opt: bool) -> None:
    settings.python = python_opt or settings.python
    settings.force = settings.force or force_opt
    settings.verify_load = settings.verify_load or verify_opt


@click.command("run", context_settings=_PASSTHROUGH)
@_run_options
@click.option("--trace", "trace_opt", is_flag=True, help="Trace every CUDA driver call the workload makes.")
@click.option("--trace-out", "trace_out_opt", metavar="FILE", help="Where to write the trace report (JSON).")
@click.option("--strict", is_flag=True, help="Stop when the host has no AMD GPU driver or HIP runtime.")
@click.option("--injector", is_flag=True,
              help="Windows: start COMMAND through the release's zluda.exe instead of placing DLLs.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@pass_settings
def run_command(settings: Settings, python_opt: str | None, force_opt: bool, verify_opt: bool,
                trust_on_first_use: bool, trace_opt: bool, trace_out_opt: str | None, strict: bool,
                injector: bool, command: tuple[str, ...]) -> None:
    """Run COMMAND under ZLUDA (``zluda-run python infer.py`` is the same).

    Checks the host, inspects the interpreter the command runs, picks the ZLUDA release, plans every
    binding, refuses when a verdict is fatal (--force to go on), then runs COMMAND with its
    arguments untouched; its exit code is passed back.
    """
    from zluda_runner.launch.run import prepare_run, start

    _merge(settings, python_opt, force_opt, verify_opt)
    settings.trace = settings.trace or trace_opt
    settings.trace_out = Path(trace_out_opt) if trace_out_opt else settings.trace_out
    run = prepare_run(list(command), settings, injector=injector, trust_on_first_use=trust_on_first_use,
                      strict=strict)
    for warning in run.warnings:
        click.echo(f"warning: {warning}", err=True)
    if settings.trace:
        sys.exit(_traced(run.plan, run.argv, settings))
    if settings.verify_load:
        sys.exit(_verified(run.plan, run.argv, run.env, settings))
    sys.exit(start(run))


def _verified(plan: ShimPlan, argv: list[str], env: dict[str, str], settings: Settings) -> int:
    from zluda_runner.launch.prepare import expected_bindings
    from zluda_runner.launch.verify import render, verify_bindings

    result = verify_bindings(argv, env, expected_bindings(plan))
    release, target = plan_refs(plan)
    record("verify-load", result, settings, ["--verify-load", *argv], release=release, target=target)
    if settings.json:
        emit_json({"verify_load": result.to_dict()})
    else:
        click.echo(render(result), err=True)
    return result.command_exit_code()


def _traced(plan: ShimPlan, argv: list[str], settings: Settings) -> int:
    from zluda_runner.report.trace_view import print_trace_summary
    from zluda_runner.trace.workload import trace_workload

    traced = trace_workload(plan, argv, settings)
    release, target = plan_refs(plan)
    record("trace", traced.report, settings, ["--trace", *argv], release=release, target=target)
    print_trace_summary(traced.report, saved_to=traced.saved_to)
    return traced.exit_code


@click.command("plan", context_settings=_PASSTHROUGH)
@_run_options
@click.option("--json", "json_flag", is_flag=True, help="Print the plan as JSON.")
@click.option("--no-cache", is_flag=True, help="Recompute the plan even if a cached one is valid.")
@click.option("--torch-lib", metavar="DIR", help="Plan for this (Windows) torch/lib folder, from any host.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@pass_settings
def plan_command(settings: Settings, python_opt: str | None, force_opt: bool, verify_opt: bool,
                 trust_on_first_use: bool, json_flag: bool, no_cache: bool, torch_lib: str | None,
                 command: tuple[str, ...]) -> None:
    """Show what ``zluda-run -- COMMAND`` would do, and whether each library will bind.

    With --verify-load, also run ``python -c "import torch"`` under the plan and report
    the file the loader really took for every planned binding.
    """
    from zluda_runner.launch.prepare import prepare_plan
    from zluda_runner.launch.run import plan_argv

    _merge(settings, python_opt, force_opt, verify_opt)
    argv = plan_argv(command, settings)
    if torch_lib:
        from zluda_runner.launch.windows import plan_for_torch_lib

        plan = plan_for_torch_lib(Path(torch_lib), settings, argv=argv, trust_on_first_use=trust_on_first_use)
    else:
        plan = prepare_plan(argv, settings, use_cache=not no_cache, trust_on_first_use=trust_on_first_use,
                            download=False)
    verification = None
    if settings.verify_load and plan.os == "linux":
        from zluda_runner.launch.verify import verify_torch_import

        verification = verify_torch_import(plan, settings.cache_dir)
        release, target = plan_refs(plan)
        record("verify-load", verification, settings, ["plan", "--verify-load"], release=release,
               target=target)
    if want_json(settings, json_flag):
        data = plan.to_dict()
        if verification is not None:
            data["verify_load"] = verification.to_dict()
        emit_json(data)
    else:
        from zluda_runner.launch.verify import render
        from zluda_runner.report.plan_view import print_plan

        print_plan(plan)
        if verification is not None:
            click.echo(render(verification), err=True)
    if (verification is not None and verification.failed) or plan.fatal:
        sys.exit(CHECK_FAILED)


COMMANDS: list[click.Command] = [run_command, plan_command]
