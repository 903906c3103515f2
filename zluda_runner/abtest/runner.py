"""``zluda-run ab``: run a workload on two sides (A: under ZLUDA, B: native ROCm), alternating
A, B, A, B, and compare what it recorded through :mod:`zluda_runner.ab`.

Outputs are compared from each side's first run that recorded them (max abs / rel error,
dtype-aware allclose, argmax agreement for logits); timings pool every run's samples
(median, min, max, and the A/B ratio of medians).  Everything that can go wrong on a side
(crash, no records, missing names, shape mismatch) becomes part of the report.
"""

from __future__ import annotations

import array
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zluda_runner import JSON_SCHEMA_VERSION
from zluda_runner.ab import AB_DIR_ENV, RECORDS_FILE
from zluda_runner.core.errors import HostError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.launch.warmup import zluda_run_argv
from zluda_runner.report import Column, Section, Table
from zluda_runner.report import render_html as report_html

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
TIE_MARGIN = 0.03  # medians within 3% are "about the same"
STDERR_TAIL_CHARS = 2000

# (rtol, atol) for comparing two *different* backends: looser than torch.testing's
# same-backend defaults, because BLAS libraries sum in different orders.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-3),
    "bfloat16": (5e-2, 1e-2),
    "complex64": (1e-4, 1e-5),
    "complex128": (1e-7, 1e-9),
}
_FP8 = (1.25e-1, 1e-1)


def tolerance_for(dtype: str) -> tuple[float, float]:
    """(rtol, atol) for a dtype name; (0, 0) -- exact -- for integers and bool."""
    if dtype in TOLERANCES:
        return TOLERANCES[dtype]
    if dtype.startswith("float8"):
        return _FP8
    return (0.0, 0.0)


# --------------------------------------------------------------------------- data


@dataclass
class Output:
    name: str
    dtype: str
    shape: list[int]
    values: list[float]
    logits: bool | None = None


@dataclass
class RunResult(JsonMixin):
    side: str
    index: int
    exit_code: int | None
    wall_s: float
    outputs: list[str] = field(default_factory=list)
    timings: dict[str, list[float]] = field(default_factory=dict)
    stderr_tail: str = ""
    error: str | None = None


@dataclass
class TimingStats(JsonMixin):
    samples: int
    median_s: float
    min_s: float
    max_s: float


@dataclass
class TimingComparison(JsonMixin):
    name: str
    a: TimingStats | None
    b: TimingStats | None
    ratio_a_over_b: float | None = None
    faster: str | None = None  # "A", "B", "same" or None when a side has no samples


@dataclass
class OutputComparison(JsonMixin):
    name: str
    status: str  # "agree", "differ", "shape_mismatch", "missing_in_a", "missing_in_b"
    dtype_a: str | None = None
    dtype_b: str | None = None
    shape_a: list[int] | None = None
    shape_b: list[int] | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    rtol: float | None = None
    atol: float | None = None
    mismatched: int = 0
    elements: int = 0
    argmax_agreement: float | None = None


@dataclass
class SideSummary(JsonMixin):
    label: str
    argv: list[str]
    runs: int = 0
    failed_runs: int = 0
    recorded_nothing: int = 0
    wall: TimingStats | None = None


@dataclass
class AbReport(JsonMixin):
    a: SideSummary
    b: SideSummary
    runs: list[RunResult] = field(default_factory=list)
    outputs: list[OutputComparison] = field(default_factory=list)
    timings: list[TimingComparison] = field(default_factory=list)
    agree: bool | None = None
    faster: str | None = None
    verdict: str = ""
    problems: list[str] = field(default_factory=list)
    schema: int = JSON_SCHEMA_VERSION


# --------------------------------------------------------------------------- commands


def default_side_a(script: Sequence[str], python: str | None = None, settings: Any = None) -> list[str]:
    """``zluda-run [global options] run -- <python> SCRIPT ARGS``: the script under ZLUDA.

    ``python`` (default: ``settings.python``, else this interpreter) runs the script; the
    global options in ``settings`` (release, ZLUDA folder, cache, ``--force``) are handed on.
    """
    interpreter = python or getattr(settings, "python", None) or sys.executable
    return zluda_run_argv([interpreter, *script], settings)


def default_side_b(script: Sequence[str], b_python: str) -> list[str]:
    return [b_python, *script]


def split_command(text: str) -> list[str]:
    """A ``--a-cmd``/``--b-cmd`` string as argv (shlex rules, never a shell)."""
    try:
        argv = shlex.split(text, posix=os.name != "nt")
    except ValueError as exc:
        raise HostError(f"cannot split command {text!r}: {exc}", hint="check the quotes") from None
    if not argv:
        raise HostError("empty command", hint="give --a-cmd/--b-cmd a program to run")
    return argv


def ab_import_dir(base: Path) -> Path:
    """A folder to put on PYTHONPATH so ``from zluda_runner import ab`` works in any interpreter.

    It holds a ``zluda_runner`` package with ``ab.py`` and an ``__init__`` that extends its
    ``__path__`` with any real ``zluda_runner`` on ``sys.path``: the zluda-run process of side A
    (which also inherits PYTHONPATH) still finds all of its own modules.
    """
    pkg = base / "zluda_runner"
    pkg.mkdir(parents=True, exist_ok=True)
    # the real package's __init__ follows, so every name it defines is there too
    init = (
        "# zluda_runner.ab for a target interpreter (written by zluda-run ab)\n"
        "from pkgutil import extend_path\n\n"
        "__path__ = extend_path(__path__, __name__)\n\n"
        + (_PACKAGE_DIR / "__init__.py").read_text(encoding="utf-8")
    )
    (pkg / "__init__.py").write_text(init, encoding="utf-8")
    source = (_PACKAGE_DIR / "ab.py").read_text(encoding="utf-8")
    (pkg / "ab.py").write_text(source, encoding="utf-8")
    return base


# --------------------------------------------------------------------------- running


Progress = Callable[[str], None]


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
    """Run A, B, A, B ... ``runs`` times each and compare.  Never raises for a failing side."""
    if runs < 1:
        raise HostError(f"--runs must be at least 1 (got {runs})", hint="use --runs 3 or more for timings")
    if timeout is not None and timeout <= 0:
        raise HostError(
            f"--timeout must be positive (got {timeout:g})", hint="give seconds, e.g. --timeout 600"
        )
    base_env = dict(os.environ if env is None else env)
    report = AbReport(a=SideSummary("A", list(a_argv)), b=SideSummary("B", list(b_argv)))
    first_outputs: dict[str, dict[str, Output]] = {"A": {}, "B": {}}
    with tempfile.TemporaryDirectory(prefix="zluda-ab-", dir=work_dir) as tmp:
        import_dir = ab_import_dir(Path(tmp) / "import")
        pythonpath = os.pathsep.join(p for p in (str(import_dir), base_env.get("PYTHONPATH", "")) if p)
        for i in range(runs):
            for side, argv in (("A", a_argv), ("B", b_argv)):
                out_dir = Path(tmp) / f"{side}-{i + 1}"
                out_dir.mkdir()
                run_env = {**base_env, "PYTHONPATH": pythonpath, AB_DIR_ENV: str(out_dir)}
                result, outputs = _run_once(side, i + 1, list(argv), run_env, cwd, timeout, out_dir)
                report.runs.append(result)
                for name, out in outputs.items():
                    first_outputs[side].setdefault(name, out)
                if progress is not None:
                    state = "ok" if result.error is None else f"FAILED ({result.error})"
                    progress(f"run {side} {i + 1}/{runs}: {result.wall_s:.2f} s, {state}")
    _summarise(report, first_outputs, rtol, atol)
    return report


def _run_once(
    side: str,
    index: int,
    argv: list[str],
    env: dict[str, str],
    cwd: Path | None,
    timeout: float | None,
    out_dir: Path,
) -> tuple[RunResult, dict[str, Output]]:
    start = time.perf_counter()
    stderr_path = out_dir / "stderr.txt"
    result = RunResult(side=side, index=index, exit_code=None, wall_s=0.0)
    try:
        with open(stderr_path, "wb") as err, open(out_dir / "stdout.txt", "wb") as out:
            proc = subprocess.run(
                argv, env=env, cwd=cwd, stdout=out, stderr=err, timeout=timeout, check=False
            )
        result.exit_code = proc.returncode
        if proc.returncode != 0:
            result.error = f"exit code {proc.returncode}"
    except FileNotFoundError:
        result.error = f"command not found: {argv[0]}"
    except PermissionError:
        result.error = f"command not executable: {argv[0]}"
    except subprocess.TimeoutExpired:
        result.error = f"timed out after {timeout:.0f} s"
    result.wall_s = time.perf_counter() - start
    try:
        result.stderr_tail = stderr_path.read_text(encoding="utf-8", errors="replace")[-STDERR_TAIL_CHARS:]
    except OSError:
        result.stderr_tail = ""
    outputs, timings, problems = read_records(out_dir)
    result.outputs = list(outputs)
    result.timings = timings
    if problems and result.error is None:
        result.error = "; ".join(problems)
    return result, outputs


def read_records(folder: Path) -> tuple[dict[str, Output], dict[str, list[float]], list[str]]:
    """Outputs (first record of each name wins) and timing samples written by :mod:`zluda_runner.ab`."""
    outputs: dict[str, Output] = {}
    timings: dict[str, list[float]] = {}
    problems: list[str] = []
    path = folder / RECORDS_FILE
    if not path.is_file():
        return outputs, timings, problems
    for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            if entry.get("kind") == "timing":
                timings.setdefault(str(entry["name"]), []).append(float(entry["seconds"]))
            elif entry.get("kind") == "output" and entry["name"] not in outputs:
                outputs[entry["name"]] = _load_output(folder, entry)
        except (ValueError, KeyError, TypeError, OSError) as exc:
            problems.append(f"unreadable record on line {lineno}: {exc}")
    return outputs, timings, problems


def _load_output(folder: Path, entry: dict[str, Any]) -> Output:
    if "file" in entry:
        data = array.array(entry.get("storage", "d"))
        raw = (folder / Path(entry["file"]).name).read_bytes()
        data.frombytes(raw)
        if sys.byteorder != "little":
            data.byteswap()
        values = [float(v) for v in data]
    else:
        values = [float(v) for v in entry["values"]]
    return Output(
        name=entry["name"],
        dtype=str(entry["dtype"]),
        shape=[int(s) for s in entry["shape"]],
        values=values,
        logits=entry.get("logits"),
    )


# --------------------------------------------------------------------------- comparing


def compare_output(
    a: Output, b: Output, rtol: float | None = None, atol: float | None = None
) -> OutputComparison:
    """Compare A against B (B, the native side, is the reference for the relative error)."""
    cmp = OutputComparison(
        name=a.name, status="agree", dtype_a=a.dtype, dtype_b=b.dtype, shape_a=a.shape, shape_b=b.shape
    )
    if a.shape != b.shape or len(a.values) != len(b.values):
        cmp.status = "shape_mismatch"
        return cmp
    # the looser tolerance of the two dtypes (e.g. float16 on one side, float32 on the other)
    tol_a, tol_b = tolerance_for(a.dtype), tolerance_for(b.dtype)
    cmp.rtol = rtol if rtol is not None else max(tol_a[0], tol_b[0])
    cmp.atol = atol if atol is not None else max(tol_a[1], tol_b[1])
    max_abs = 0.0
    max_rel = 0.0
    mismatched = 0
    for x, y in zip(a.values, b.values, strict=True):
        if math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                mismatched += 1
            continue
        if math.isinf(x) or math.isinf(y):
            if x != y:
                mismatched += 1
            continue
        diff = abs(x - y)
        max_abs = max(max_abs, diff)
        if diff:
            max_rel = max(max_rel, diff / abs(y) if y else math.inf)
        if diff > cmp.atol + cmp.rtol * abs(y):
            mismatched += 1
    cmp.elements = len(a.values)
    cmp.mismatched = mismatched
    cmp.max_abs_error = max_abs
    cmp.max_rel_error = max_rel if math.isfinite(max_rel) else None  # None: B is 0 where A is not
    cmp.status = "agree" if mismatched == 0 else "differ"
    is_logits = a.logits if a.logits is not None else "logit" in a.name.lower()
    if is_logits and a.shape and a.shape[-1] > 1:
        cmp.argmax_agreement = argmax_agreement(a.values, b.values, a.shape[-1])
    return cmp


def argmax_agreement(a: Sequence[float], b: Sequence[float], width: int) -> float:
    """Fraction of rows (last dimension ``width``) whose argmax is the same on both sides."""
    rows = len(a) // width
    if rows == 0:
        return 1.0
    same = 0
    for r in range(rows):
        ra, rb = a[r * width : (r + 1) * width], b[r * width : (r + 1) * width]
        if max(range(width), key=ra.__getitem__) == max(range(width), key=rb.__getitem__):
            same += 1
    return same / rows


def timing_stats(samples: Sequence[float]) -> TimingStats | None:
    if not samples:
        return None
    return TimingStats(len(samples), statistics.median(samples), min(samples), max(samples))


def _faster(a: TimingStats | None, b: TimingStats | None) -> tuple[float | None, str | None]:
    if a is None or b is None or b.median_s <= 0:
        return None, None
    ratio = a.median_s / b.median_s
    if abs(ratio - 1.0) <= TIE_MARGIN:
        return ratio, "same"
    return ratio, "A" if ratio < 1.0 else "B"


def _summarise(
    report: AbReport, first: dict[str, dict[str, Output]], rtol: float | None, atol: float | None
) -> None:
    for summary in (report.a, report.b):
        side_runs = [r for r in report.runs if r.side == summary.label]
        summary.runs = len(side_runs)
        summary.failed_runs = sum(1 for r in side_runs if r.exit_code != 0)
        summary.recorded_nothing = sum(1 for r in side_runs if not r.outputs and not r.timings)
        summary.wall = timing_stats([r.wall_s for r in side_runs if r.exit_code == 0])
        if summary.failed_runs:
            last = next(r for r in reversed(side_runs) if r.exit_code != 0)
            why = _last_error_line(last.stderr_tail)
            report.problems.append(
                f"side {summary.label} failed in {summary.failed_runs}/{summary.runs} run(s) "
                f"({last.error}){': ' + why if why else ''}"
            )
        elif summary.recorded_nothing == summary.runs:
            report.problems.append(
                f"side {summary.label} recorded nothing (does the script call ab.record / "
                "ab.timer? is zluda_runner.ab importable there?)"
            )
    names_a, names_b = first["A"], first["B"]
    for name in sorted(set(names_a) | set(names_b), key=lambda n: (n not in names_a, n)):
        if name not in names_b:
            report.outputs.append(
                OutputComparison(
                    name=name, status="missing_in_b", dtype_a=names_a[name].dtype, shape_a=names_a[name].shape
                )
            )
        elif name not in names_a:
            report.outputs.append(
                OutputComparison(
                    name=name, status="missing_in_a", dtype_b=names_b[name].dtype, shape_b=names_b[name].shape
                )
            )
        else:
            report.outputs.append(compare_output(names_a[name], names_b[name], rtol, atol))
    pooled: dict[str, dict[str, list[float]]] = {"A": {}, "B": {}}
    for run in report.runs:
        for name, samples in run.timings.items():
            pooled[run.side].setdefault(name, []).extend(samples)
    for name in sorted(set(pooled["A"]) | set(pooled["B"])):
        a, b = timing_stats(pooled["A"].get(name, [])), timing_stats(pooled["B"].get(name, []))
        ratio, faster = _faster(a, b)
        report.timings.append(TimingComparison(name, a, b, ratio, faster))
    for cmp in report.outputs:
        if cmp.status == "shape_mismatch":
            report.problems.append(f"output {cmp.name!r}: shape {cmp.shape_a} on A vs {cmp.shape_b} on B")
        elif cmp.status.startswith("missing_in_"):
            report.problems.append(
                f"output {cmp.name!r} was recorded only on side "
                f"{'A' if cmp.status == 'missing_in_b' else 'B'}"
            )
    if report.outputs:
        report.agree = all(c.status == "agree" for c in report.outputs)
    report.verdict = _verdict(report)


def _last_error_line(stderr: str) -> str:
    """The line that says why: zluda-run's own ``error: ...`` when it refused, else the last line."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    own = [line for line in lines if line.startswith("error: ")]
    return (own or lines or [""])[-1]


def _verdict(report: AbReport) -> str:
    parts: list[str] = []
    timed = [t for t in report.timings if t.faster is not None and t.a and t.b]
    # the verdict speaks of the region that takes longest: it dominates what a user waits for
    basis = max(timed, key=lambda t: t.a.median_s + t.b.median_s, default=None)  # type: ignore[union-attr]
    if basis is None and report.a.wall and report.b.wall:
        ratio, faster = _faster(report.a.wall, report.b.wall)
        basis = TimingComparison("whole run", report.a.wall, report.b.wall, ratio, faster)
    if basis is not None and basis.a and basis.b and basis.ratio_a_over_b is not None:
        report.faster = basis.faster
        a_s, b_s = basis.a.median_s, basis.b.median_s
        if basis.faster == "same":
            parts.append(
                f"A and B take about the same time on {basis.name!r} (median {a_s:.3g} s vs {b_s:.3g} s)"
            )
        else:
            fast, slow = ("A", "B") if basis.faster == "A" else ("B", "A")
            factor = max(basis.ratio_a_over_b, 1 / basis.ratio_a_over_b)
            parts.append(
                f"{fast} is {factor:.2f}x faster than {slow} on {basis.name!r} "
                f"(median {a_s:.3g} s on A vs {b_s:.3g} s on B)"
            )
    else:
        parts.append("no timing to compare")
    if report.agree is True:
        parts.append(f"outputs agree ({len(report.outputs)} compared)")
    elif report.agree is False:
        bad = [c for c in report.outputs if c.status != "agree"]
        worst = bad[0]
        if worst.status == "differ":
            parts.append(
                f"outputs DISAGREE: {worst.name!r} max abs error {worst.max_abs_error:.3g} "
                f"({worst.mismatched}/{worst.elements} elements outside rtol={worst.rtol:g}, "
                f"atol={worst.atol:g})"
            )
        else:
            parts.append(f"outputs DISAGREE: {worst.name!r} {worst.status.replace('_', ' ')}")
    else:
        parts.append("no outputs to compare")
    text = "; ".join(parts)
    if report.problems:
        text += ". Problems: " + " | ".join(report.problems)
    return text


# --------------------------------------------------------------------------- views


def render_text(report: AbReport) -> str:
    lines = [f"A: {shlex.join(report.a.argv)}", f"B: {shlex.join(report.b.argv)}", ""]
    if report.outputs:
        lines.append("outputs:")
        for c in report.outputs:
            if c.status in ("agree", "differ"):
                extra = f", argmax agree {c.argmax_agreement:.0%}" if c.argmax_agreement is not None else ""
                rel = f"{c.max_rel_error:.3g}" if c.max_rel_error is not None else "n/a"
                lines.append(
                    f"  {c.name:<20} {c.status:<7} max abs {c.max_abs_error:.3g}, max rel {rel}"
                    f" ({c.dtype_a}/{c.dtype_b}, {c.shape_a}){extra}"
                )
            else:
                lines.append(f"  {c.name:<20} {c.status}")
    if report.timings:
        lines.append("timings (median / min / max, seconds):")
        for t in report.timings:
            a = f"{t.a.median_s:.4g}/{t.a.min_s:.4g}/{t.a.max_s:.4g}" if t.a else "-"
            b = f"{t.b.median_s:.4g}/{t.b.min_s:.4g}/{t.b.max_s:.4g}" if t.b else "-"
            ratio = f"A/B {t.ratio_a_over_b:.2f}" if t.ratio_a_over_b is not None else ""
            lines.append(f"  {t.name:<20} A {a}  B {b}  {ratio}")
    lines += ["", f"verdict: {report.verdict}"]
    return "\n".join(lines)


_ROW_STATUS = {  # output status -> the shared report's status vocabulary (colour, filter)
    "agree": "ok",
    "differ": "mismatch",
    "shape_mismatch": "mismatch",
    "missing_in_a": "missing",
    "missing_in_b": "missing",
}


def ab_sections(report: AbReport) -> list[Section]:
    """The report as sections of the shared report model (:mod:`zluda_runner.report`)."""
    lines = [
        f"Verdict: {report.verdict}",
        f"A: {shlex.join(report.a.argv)}",
        f"B: {shlex.join(report.b.argv)}",
    ]
    lines += [f"problem: {p}" for p in report.problems]
    outputs = Table(
        "outputs",
        [
            Column("name", "name"),
            Column("status", "status"),
            Column("result", "result"),
            Column("dtypes", "dtype A/B"),
            Column("shape", "shape"),
            Column("max_abs", "max abs error", True),
            Column("max_rel", "max rel error", True),
            Column("mismatched", "outside tolerance"),
            Column("argmax", "argmax agreement", True),
        ],
        [
            {
                "name": c.name,
                "status": _ROW_STATUS.get(c.status, c.status),
                "result": c.status.replace("_", " "),
                "dtypes": f"{c.dtype_a or '-'}/{c.dtype_b or '-'}",
                "shape": "x".join(map(str, c.shape_a or c.shape_b or [])) or "scalar",
                "max_abs": c.max_abs_error,
                "max_rel": c.max_rel_error,
                "mismatched": f"{c.mismatched}/{c.elements}" if c.elements else None,
                "argmax": c.argmax_agreement,
            }
            for c in report.outputs
        ],
    )
    stat_columns = [
        Column(f"{side}_{key}", f"{side.upper()} {key} (s)", True)
        for side in ("a", "b")
        for key in ("median", "min", "max")
    ]
    timings = Table(
        "timings",
        [Column("name", "region"), *stat_columns, Column("ratio", "A/B", True), Column("faster", "faster")],
        [
            {
                "name": t.name,
                **_stat_cells("a", t.a),
                **_stat_cells("b", t.b),
                "ratio": t.ratio_a_over_b,
                "faster": t.faster,
            }
            for t in report.timings
        ],
        status_key=None,
    )
    runs = Table(
        "runs (in the order they ran)",
        [
            Column("run", "run"),
            Column("status", "status"),
            Column("wall", "wall (s)", True),
            Column("outputs", "outputs recorded", True),
            Column("error", "error"),
        ],
        [
            {
                "run": f"{r.side}{r.index}",
                "status": "ok" if r.error is None else "failed",
                "wall": r.wall_s,
                "outputs": len(r.outputs),
                "error": r.error,
            }
            for r in report.runs
        ],
    )
    return [Section("A/B comparison", lines, [outputs, timings, runs])]


def render_html(report: AbReport) -> str:
    """A self-contained page, drawn by the project's shared report renderer."""
    return report_html("zluda-run ab", ab_sections(report))


def _stat_cells(side: str, stats: TimingStats | None) -> dict[str, float | None]:
    return {
        f"{side}_median": stats.median_s if stats else None,
        f"{side}_min": stats.min_s if stats else None,
        f"{side}_max": stats.max_s if stats else None,
    }
