"""poc: the proof-of-concept verdict -- options -> one API call (:func:`zluda_runner.api.poc.run_poc`)
-> one view -> exit code."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zluda_runner.api.options import worded_for
from zluda_runner.api.poc import run_poc
from zluda_runner.api.store import output_path, results_files
from zluda_runner.commands import command
from zluda_runner.commands.common import (
    NOT_NEGATIVE,
    RUNS,
    SECONDS,
    GivenPath,
    Invocation,
    Number,
    emit_json,
    pass_invocation,
    warn,
    write_page,
)
from zluda_runner.core.argcheck import Range
from zluda_runner.core.exitcodes import ERROR, OK
from zluda_runner.report import poc_html, poc_view


@command("poc", {"allow_interspersed_args": False})
@click.option("--runs", type=RUNS, default=3, show_default=True,
              help="Runs of the workload (the first compiles and is reported apart).")
@click.option("--reference", default="cpu", show_default=True, metavar="cpu|CMD",
              help="What the outputs and speed are checked against: cpu (the same command without ZLUDA, "
              "CUDA_VISIBLE_DEVICES=\"\"), or a native ROCm command line (split like a shell would, "
              "never run by one).")
@click.option("--native", is_flag=True, help="No ZLUDA: run the command as it is (an NVIDIA or native "
              "ROCm baseline; telemetry through NVML where present).")
@click.option("--timeout", type=SECONDS, metavar="SECONDS", help="Stop a run that takes longer.")
@click.option("--rtol", type=NOT_NEGATIVE, help="Relative tolerance of the outputs (default: by dtype).")
@click.option("--atol", type=NOT_NEGATIVE, help="Absolute tolerance (default: by dtype; float16: at least 1% "
              "of the values' size).")
@click.option("--min-speedup", type=NOT_NEGATIVE, metavar="X",
              help="Reference time / ours that 'speed' needs (default: 1 against cpu, 0.5 against CMD).")
@click.option("--interval", type=Number(Range(ge=0.01)), metavar="SECONDS",
              help="Seconds between GPU telemetry samples (default 0.2).")
@click.option("--html", "html_path", type=GivenPath(), metavar="FILE",
              help="Also write an HTML report with plots of utilisation and VRAM per run to FILE.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@pass_invocation
def poc(call: Invocation, runs: int, reference: str, native: bool, timeout: float | None,
        rtol: float | None, atol: float | None, min_speedup: float | None, interval: float | None,
        html_path: Path | None, command: tuple[str, ...]) -> None:
    """\b
    ran         every run exits 0
    right       its ab.record outputs match the reference's (within tolerances)
    on the GPU  telemetry shows the GPU busy or its VRAM held while it runs
    stable      no crash; VRAM back to its baseline after each run
    speed       its ab.timer regions (after run 1, which compiles) against the
                reference

    Each criterion passes or fails with its evidence; exit code 0 only when all
    pass, 3 otherwise.

    \b
    Example:
      zluda-run poc --runs 3 --reference cpu -- python examples/llama_infer.py
    """
    keep = results_files(call.options) if html_path else ()
    html = output_path(html_path, keep) if html_path else None
    argv = list(command[1:] if command[:1] == ("--",) else command)
    with worded_for("command line"):
        report = run_poc(argv, runs=runs, reference=reference, native=native, options=call.options,
                         timeout=timeout, rtol=rtol, atol=atol, min_speedup=min_speedup, interval=interval,
                         progress=lambda line: click.echo(line, err=True), on_warning=warn)
    page_error = write_page(html, lambda: poc_html.render_poc_html(report), keep)
    if call.json:
        emit_json(report)
    else:
        poc_view.print_poc(report, html=Path(html) if html and not page_error else None)
    if page_error:
        warn(page_error)
    sys.exit(report.exit_code or (ERROR if page_error else OK))


COMMANDS: list[click.Command] = [poc]
