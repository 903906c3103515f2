"""find: the search for a combination that works -- options -> one API call
(:func:`zluda_runner.api.find.find`) -> one view -> exit code."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from zluda_runner.api.find import find as find_combination
from zluda_runner.api.options import worded_for
from zluda_runner.commands import command
from zluda_runner.commands.common import (
    NOT_NEGATIVE,
    RUNS,
    SECONDS,
    GivenPath,
    Invocation,
    emit_json,
    pass_invocation,
)
from zluda_runner.commands.common import warn as warn_line
from zluda_runner.report import find_view


@command("find", {"allow_interspersed_args": False})
@click.option("--runs", type=RUNS, default=1, show_default=True, help="Runs of the workload per candidate.")
@click.option("--reference", default="cpu", show_default=True, metavar="cpu|CMD",
              help="What the outputs and speed are checked against (as for poc).")
@click.option("--candidate", "candidates", type=GivenPath(), multiple=True, metavar="DIR|ARCHIVE",
              help="A ZLUDA folder or release archive to try too (repeatable); a global --zluda-dir counts "
              "as one more.")
@click.option("--only-candidates", is_flag=True,
              help="Try only the --candidate folders and archives, not the manifest's releases.")
@click.option("--budget", type=SECONDS, metavar="SECONDS", help="Start no candidate after this long.")
@click.option("--lock", "lock_path", type=GivenPath(dir_okay=False), default=Path("zluda.lock"),
              show_default=True, metavar="FILE", help="Where the lock is written.")
@click.option("--from", "known_from", metavar="FILE|URL",
              help="A results bundle (results export) whose known-good locks for this GPU are tried first.")
@click.option("--timeout", type=SECONDS, metavar="SECONDS", help="Stop a run that takes longer.")
@click.option("--min-speedup", type=NOT_NEGATIVE, metavar="X",
              help="Reference time / ours that 'speed' needs (default: 1 against cpu, 0.5 against CMD).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@pass_invocation
def find(call: Invocation, runs: int, reference: str, candidates: tuple[Path, ...], only_candidates: bool,
         budget: float | None, lock_path: Path, known_from: str | None, timeout: float | None,
         min_speedup: float | None, command: tuple[str, ...]) -> None:
    """\b
    Candidates: the known-good locks of --from for this GPU, the manifest's
    releases that fit this host and torch (best first), each --candidate, a
    global --zluda-dir; after a candidate's defaults failed, its variants:
    the host's other HIP SDKs (also after a FATAL plan), pinned memory off
    where the release lacks it, cuDNN off (on where MIOpen is present), the
    injector on Windows. A FATAL plan costs no run. Each is judged as poc
    judges (ran, right, on the GPU, stable, speed); the first that passes
    every criterion judged here is locked. Without GPU telemetry it is
    locked as "not proven on the GPU" and the exit code is 3; 0 only when
    all five pass; 130 on Ctrl-C (what was judged so far is kept).

    \b
    Example:
      zluda-run find --runs 2 -- python examples/llama_infer.py
      zluda-run --lock zluda.lock -- python examples/llama_infer.py
    """
    argv = list(command[1:] if command[:1] == ("--",) else command)
    with worded_for("command line"):
        report = find_combination(argv, runs=runs, reference=reference, candidates=candidates,
                                  only_candidates=only_candidates, budget=budget, lock=lock_path,
                                  known_from=known_from, options=call.options, timeout=timeout,
                                  min_speedup=min_speedup,
                                  progress=lambda line: click.echo(line, err=True), on_warning=warn_line)
    if call.json:
        emit_json(report)
    else:
        find_view.print_find(report)
    sys.exit(report.exit_code)


COMMANDS: list[click.Command] = [find]
