"""run / plan / restore / status commands.

Kept light at import time: ``zluda-run python infer.py`` with a cached plan
must add little to the workload's start (benchmarks/launch_overhead.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.core.paths import CachePaths
from zluda_runner.core.settings import Settings

_PASSTHROUGH = {"ignore_unknown_options": True, "allow_interspersed_args": False}


def _run_options(func):
    """Options that may also be given before the command word (``zluda-run --force -- CMD``)."""
    func = click.option("--python", "python_opt", metavar="PY", help="Target interpreter.")(func)
    func = click.option("--force", "force_opt", is_flag=True, help="Run even when a verdict is fatal.")(func)
    func = click.option("--verify-load", "verify_opt", is_flag=True,
                        help="Run under LD_DEBUG and prove which file each library bound to.")(func)
    return func


def _merge(settings: Settings, python_opt: str | None, force_opt: bool, verify_opt: bool) -> None:
    if python_opt:
        settings.python = python_opt
    settings.force = settings.force or force_opt
    settings.verify_load = settings.verify_load or verify_opt


@click.command("run", context_settings=_PASSTHROUGH)
@_run_options
@click.option("--trace", "trace_opt", is_flag=True, help="Trace every CUDA driver call the workload makes.")
@click.option("--trace-out", "trace_out_opt", metavar="FILE", help="Where to write the trace report (JSON).")
@click.option("--trust-on-first-use", is_flag=True, help="Accept a release whose SHA-256 is not published.")
@click.option(
    "--injector", is_flag=True,
    help="Windows: start COMMAND through the release's zluda.exe instead of placing DLLs in torch/lib.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@pass_settings
def run_command(
    settings: Settings,
    python_opt: str | None,
    force_opt: bool,
    verify_opt: bool,
    trace_opt: bool,
    trace_out_opt: str | None,
    trust_on_first_use: bool,
    injector: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND under ZLUDA (``zluda-run python infer.py`` is the same).

    Inspects the interpreter the command runs, picks the ZLUDA release, plans every
    binding, refuses when a verdict is fatal (--force to go on), then runs COMMAND with
    its arguments untouched; its exit code is passed back.
    """
    from zluda_runner.launch.prepare import check_argv, launch_env, prepare_plan, refuse_if_fatal

    _merge(settings, python_opt, force_opt, verify_opt)
    settings.trace = settings.trace or trace_opt
    if trace_out_opt:
        settings.trace_out = Path(trace_out_opt)
    argv = list(command)
    check_argv(argv)
    from zluda_runner.launch.process import resolve_command

    resolve_command(argv[0], os.environ)  # a command that does not exist: exit 127 before any planning
    plan = prepare_plan(argv, settings, trust_on_first_use=trust_on_first_use)
    refuse_if_fatal(plan, settings.force)
    if plan.os == "windows" and injector:
        argv = _injector_argv(plan, argv)
    elif plan.os == "windows" and plan.placements:
        from zluda_runner.launch.prepare import place_for_plan

        place_for_plan(plan)
    if settings.trace:
        sys.exit(_traced(plan, argv, settings))
    env = launch_env(plan, settings.cache_dir)
    if settings.verify_load:
        sys.exit(_verify(plan, argv, env, settings))
    from zluda_runner.launch.process import run_process

    sys.exit(run_process(argv, env))


def _injector_argv(plan, argv: list[str]) -> list[str]:
    """``zluda.exe -- CMD``: the release's own Detours injector (nothing is copied into torch/lib)."""
    from zluda_runner.core.errors import LaunchError
    from zluda_runner.launch.windows import zluda_exe_argv

    if plan.release is None:
        raise LaunchError("the plan names no release folder", hint="pass --zluda-dir DIR")
    return zluda_exe_argv(Path(plan.release.root), argv)


def _verify(plan, argv, env, settings: Settings) -> int:
    """--verify-load: what the loader took, in its own words (launch/verify.py decides what it means)."""
    from zluda_runner.launch.prepare import expected_bindings
    from zluda_runner.launch.verify import verify_bindings

    result = verify_bindings(argv, env, expected_bindings(plan))
    _show_verification(result, settings)
    return result.command_exit_code()


def _show_verification(result, settings: Settings) -> None:
    from zluda_runner.launch.verify import render

    if settings.json:
        emit_json({"verify_load": result.to_dict()})
    else:
        click.echo(render(result), err=True)


def _traced(plan, argv, settings: Settings) -> int:
    """Run under the call tracer: the release's own (``trace/``) or our interposer over ZLUDA's driver."""
    import copy
    import time

    from zluda_runner.core.errors import TraceError
    from zluda_runner.launch.prepare import launch_env
    from zluda_runner.report.views import trace_markdown
    from zluda_runner.trace import run_traced

    driver = next((b for b in plan.bindings if b.family == "driver" and b.shim), None)
    if driver is None or plan.os != "linux":
        raise TraceError(
            "tracing needs a Linux plan with a driver library to forward to",
            hint="see `zluda-run plan -- CMD`: the release must provide libcuda.so.1",
        )
    # The tracer must be the libcuda.so.1 the workload finds: keep ZLUDA's driver out of our links.
    traced_plan = copy.deepcopy(plan)
    for mapping in (traced_plan.link_map, traced_plan.redirect_map):
        for name in [n for n, target in mapping.items() if target == driver.shim]:
            del mapping[name]
    env = launch_env(traced_plan, settings.cache_dir)
    out_dir = CachePaths(settings.cache_dir).traces
    zluda_dir = Path(plan.release.root) if plan.release else None
    report = run_traced(
        argv, env, real_libcuda=Path(driver.shim), out_dir=out_dir, zluda_dir=zluda_dir,
        cache_dir=settings.cache_dir,
    )
    target = settings.trace_out or out_dir / f"trace-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(report.to_json())
    except OSError as exc:
        fallback = out_dir / target.name
        fallback.parent.mkdir(parents=True, exist_ok=True)
        fallback.write_text(report.to_json())  # never lose the report
        raise TraceError(
            f"could not write the trace report to {target}: {exc.strerror or exc}; "
            f"it was saved as {fallback}",
            hint="pass --trace-out a path in a folder you can write",
        ) from exc
    click.echo(trace_markdown(report), err=True)
    click.echo(f"trace report: {target}", err=True)
    return report.exit_code if report.exit_code is not None else 124


@click.command("plan", context_settings=_PASSTHROUGH)
@_run_options
@click.option("--json", "json_flag", is_flag=True, help="Print the plan as JSON.")
@click.option("--no-cache", is_flag=True, help="Recompute the plan even if a cached one is valid.")
@click.option("--trust-on-first-use", is_flag=True, help="Accept a release whose SHA-256 is not published.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@pass_settings
def plan_command(
    settings: Settings,
    python_opt: str | None,
    force_opt: bool,
    verify_opt: bool,
    json_flag: bool,
    no_cache: bool,
    trust_on_first_use: bool,
    command: tuple[str, ...],
) -> None:
    """Show what ``zluda-run -- COMMAND`` would do, and whether each library will bind.

    With --verify-load, also run ``python -c "import torch"`` under the plan and report
    the file the loader really took for every planned binding.
    """
    from zluda_runner.launch.prepare import launch_env, prepare_plan

    _merge(settings, python_opt, force_opt, verify_opt)
    argv = [a for a in command if a != "--"] or ([settings.python] if settings.python else [])
    plan = prepare_plan(argv, settings, use_cache=not no_cache, trust_on_first_use=trust_on_first_use)
    verification = None
    if settings.verify_load and plan.os == "linux":
        from zluda_runner.launch.prepare import expected_bindings
        from zluda_runner.launch.verify import verify_bindings

        python = plan.target.python or sys.executable
        env = launch_env(plan, settings.cache_dir)
        verification = verify_bindings([python, "-c", "import torch"], env, expected_bindings(plan))
    if want_json(settings, json_flag):
        data = plan.to_dict()
        if verification is not None:
            data["verify_load"] = verification.to_dict()
        emit_json(data)
    else:
        from zluda_runner.report.plan_view import print_plan

        print_plan(plan)
        if verification is not None:
            _show_verification(verification, settings)
    if (verification is not None and verification.failed) or plan.fatal:
        sys.exit(CHECK_FAILED)


COMMANDS: list[click.Command] = [run_command, plan_command]
