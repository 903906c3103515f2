"""Running the two sides: A, B, A, B ... each run in its own record folder, with the
in-workload API (:mod:`zluda_runner.ab`) importable in any interpreter; then reading back
what each run recorded.  Everything that goes wrong on a side becomes part of the report.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from zluda_runner.ab import AB_DIR_ENV
from zluda_runner.abtest.compare import summarise
from zluda_runner.abtest.model import AbReport, Output, RunResult, Side, SideSummary
from zluda_runner.abtest.records import read_records
from zluda_runner.core.child import run_tree
from zluda_runner.core.errors import HostError
from zluda_runner.core.fsutil import atomic_write_text
from zluda_runner.core.paths import real_path
from zluda_runner.core.proctree import ENDING_SIGNALS, Signalled, raise_signalled, signals_held

_PACKAGE_DIR = Path(real_path(__file__)).parent.parent
STDERR_TAIL_CHARS = 2000

Progress = Callable[[str], None]


def ab_import_dir(base: Path) -> Path:
    """A folder to put on PYTHONPATH so ``from zluda_runner import ab`` works in any interpreter.

    It holds a ``zluda_runner`` package with ``ab.py`` and an ``__init__`` that extends its
    ``__path__`` with any real ``zluda_runner`` on ``sys.path``: the zluda-run process of side A
    (which also inherits PYTHONPATH) still finds all of its own modules.
    """
    pkg = base / "zluda_runner"
    pkg.mkdir(parents=True, exist_ok=True)
    # the real package's __init__ first (a docstring and __future__ imports must open the module),
    # so every name it defines is there too; then its __path__ is extended
    init = (
        (_PACKAGE_DIR / "__init__.py").read_text(encoding="utf-8")
        + "\n\n# zluda_runner.ab for a target interpreter (written by zluda-run ab)\n"
        "from pkgutil import extend_path as _zr_extend_path  # noqa: E402\n\n"
        "__path__ = _zr_extend_path(__path__, __name__)\n"
    )
    atomic_write_text(pkg / "__init__.py", init)
    atomic_write_text(pkg / "ab.py", (_PACKAGE_DIR / "ab.py").read_text(encoding="utf-8"))
    return base


@contextlib.contextmanager
def record_space(prefix: str, work_dir: Path | None = None) -> Iterator[tuple[Path, Path]]:
    """A temporary folder for the runs' record folders and the import folder (:func:`ab_import_dir`)
    in it, removed afterwards; a :class:`HostError` when they cannot be made (a full or read-only
    temporary folder), before anything runs.

    A SIGTERM/SIGHUP (``kill``, a CI job's timeout) at any point of the block, a side running or its
    records being read, ends the run that is going (its tree killed), removes the folder, then ends
    us with 128+N: its default, anywhere but in a side's run, left the folder (the runs' tensors) in
    the temporary folder, for ``ab`` and ``poc`` alike."""
    with signals_held(ENDING_SIGNALS) as relay:
        relay.deliver_to(raise_signalled)
        try:
            with _record_space(prefix, work_dir) as made:
                yield made
        except Signalled as stop:
            raise SystemExit(128 + stop.signum) from None


@contextlib.contextmanager
def _record_space(prefix: str, work_dir: Path | None) -> Iterator[tuple[Path, Path]]:
    try:
        space = tempfile.TemporaryDirectory(prefix=prefix, dir=work_dir, ignore_cleanup_errors=True)
        try:
            import_dir = ab_import_dir(Path(space.name) / "import")
        except BaseException:
            space.cleanup()
            raise
    except OSError as exc:
        where = work_dir or tempfile.gettempdir()
        raise HostError(f"cannot prepare the record folders in {where}: {exc.strerror or exc}",
                        hint="free space there, or give the temporary folder another place (TMPDIR)"
                        ) from None
    try:
        with space:
            yield Path(space.name), import_dir
    finally:  # its removal cut short (a SIGTERM in the middle of it, raised there): finish it
        if os.path.lexists(space.name):
            shutil.rmtree(space.name, ignore_errors=True)


def run_ab(
    a_argv: Sequence[str],
    b_argv: Sequence[str],
    *,
    runs: int = 3,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float | None = None,
    work_dir: Path | None = None,
    progress: Progress | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> AbReport:
    """Run A, B, A, B ... ``runs`` times each and compare.  Never raises for a failing side.

    A SIGTERM/SIGHUP at any point ends it with 128+N once the record folders are gone
    (:func:`record_space`)."""
    base_env = dict(os.environ if env is None else env)
    runs_done: list[RunResult] = []
    first_outputs: dict[str, dict[str, Output]] = {"A": {}, "B": {}}
    sides: tuple[tuple[Side, Sequence[str]], ...] = (("A", a_argv), ("B", b_argv))
    with record_space("zluda-ab-", work_dir) as (tmp, import_dir):
        for i in range(runs):
            for side, argv in sides:
                done = run_recorded(argv, base_env, tmp / f"{side}-{i + 1}", import_dir, cwd=cwd,
                                    timeout=timeout)
                result = RunResult(side=side, index=i + 1, exit_code=done.exit_code, wall_s=done.wall_s,
                                   outputs=tuple(done.outputs), timings=dict(done.timings),
                                   stderr_tail=done.stderr_tail, error=done.error)
                runs_done.append(result)
                for name, out in done.outputs.items():
                    first_outputs[side].setdefault(name, out)
                if progress is not None:
                    state = "ok" if result.error is None else f"FAILED ({result.error})"
                    progress(f"run {side} {i + 1}/{runs}: {result.wall_s:.2f} s, {state}")
    report = AbReport(a=SideSummary("A", tuple(a_argv)), b=SideSummary("B", tuple(b_argv)),
                      runs=tuple(runs_done))
    return summarise(report, first_outputs, rtol, atol)


@dataclass(frozen=True)
class SideRun:
    """One run of a side's command in its own record folder, and what it recorded there.

    ``error``: a non-zero exit, a command not found or not executable, a timeout, else unreadable
    records (None: none of these)."""

    argv: tuple[str, ...]
    exit_code: int | None
    error: str | None
    wall_s: float
    stderr_tail: str
    stdout_tail: str
    outputs: Mapping[str, Output]
    timings: Mapping[str, tuple[float, ...]]


def run_recorded(
    argv: Sequence[str],
    env: Mapping[str, str],
    out_dir: Path,
    import_dir: Path,
    *,
    cwd: Path | None = None,
    timeout: float | None = None,
) -> SideRun:
    """Run ``argv`` once with :mod:`zluda_runner.ab` importable (``import_dir``, see :func:`ab_import_dir`)
    and recording into ``out_dir`` (made here; its stdout and stderr go there too); then read it back.
    The folder is removed once read: a run's tensor files can be large, and N runs would keep N copies
    on disk until the last one ended."""
    try:
        out_dir.mkdir(parents=True)
    except OSError as exc:  # the temporary folder filled up after the runs before
        return SideRun(argv=tuple(argv), exit_code=None,
                       error=f"cannot make its record folder: {exc.strerror or exc}", wall_s=0.0,
                       stderr_tail="", stdout_tail="", outputs={}, timings={})
    pythonpath = os.pathsep.join(p for p in (str(import_dir), env.get("PYTHONPATH", "")) if p)
    run_env = {**env, "PYTHONPATH": pythonpath, AB_DIR_ENV: str(out_dir)}
    args = list(argv)
    exit_code: int | None = None
    error: str | None = None
    start = time.perf_counter()
    try:  # the root of its own tree, its stdin closed (nobody could answer a prompt): nothing it started
        # outlives the run (a leftover would hold the GPU's memory into the next run); a signal sent to us
        # ends it, then us (128+N), the record folders removed on the way out (record_space)
        with open(out_dir / "stderr.txt", "wb") as err, open(out_dir / "stdout.txt", "wb") as out:
            ended = run_tree(args, env=run_env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             timeout=timeout)
        ended.pass_on()
        if ended.timed_out:
            error = f"timed out after {timeout:g} s"
        else:
            exit_code = ended.returncode
            error = None if exit_code == 0 else f"exit code {exit_code}"
    except FileNotFoundError:
        error = f"command not found: {args[0]}"
    except PermissionError:
        error = f"command not executable: {args[0]}"
    except OSError as exc:  # not a program this system runs (a script without #!, another machine's)
        error = f"cannot start {args[0]}: {exc.strerror or exc}"
    wall_s = time.perf_counter() - start
    outputs, timings, problems = read_records(out_dir)
    if problems and error is None:
        error = "; ".join(problems)
    done = SideRun(argv=tuple(args), exit_code=exit_code, error=error, wall_s=wall_s,
                   stderr_tail=_tail(out_dir / "stderr.txt"), stdout_tail=_tail(out_dir / "stdout.txt"),
                   outputs=outputs, timings={name: tuple(samples) for name, samples in timings.items()})
    shutil.rmtree(out_dir, ignore_errors=True)
    return done


def _tail(path: Path) -> str:
    """The last ``STDERR_TAIL_CHARS`` of a file (read from its end: a chatty workload's output is large)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 4 * STDERR_TAIL_CHARS))
            return fh.read().decode("utf-8", errors="replace")[-STDERR_TAIL_CHARS:]
    except OSError:
        return ""
