"""Judging the runs: each criterion of the verdict, a pure function of the runs, with its evidence.

ran -- every run exited 0.  right -- every run's recorded outputs match the reference's.  on the
GPU -- telemetry saw the GPU busy or its VRAM held while each run ran.  stable -- no crash, and
VRAM back to its baseline after each run (a figure that grows run after run fails).  speed -- the
longest ``ab.timer`` region, runs after the first (which compiles), against the reference.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence

from zluda_runner.abtest.model import OutputComparison
from zluda_runner.core.units import format_bytes
from zluda_runner.poc.model import Criterion, PocRun, Status, Thresholds

NATIVE_MIN_SPEEDUP = 0.5  # against native ROCm: ZLUDA at half its speed or better is worth having
CPU_MIN_SPEEDUP = 1.0  # against the CPU: the GPU must at least beat it


def judge_ran(runs: Sequence[PocRun]) -> Criterion:
    failed = [r for r in runs if not r.ok]
    evidence = tuple(
        f"run {r.index}: exit {r.exit_code}, {r.wall_s:.2f} s" + (f" -- {r.error}" if r.error else "")
        + (f": {_last_line(r.stderr_tail)}" if not r.ok and _last_line(r.stderr_tail) else "")
        + (f"; printed: {_last_line(r.stdout_tail)}" if r.ok and _last_line(r.stdout_tail) else "")
        for r in runs
    )
    if not runs:
        return Criterion("ran", "fail", "nothing ran", evidence)
    if failed:
        return Criterion("ran", "fail", f"{len(failed)} of {len(runs)} runs failed", evidence)
    return Criterion("ran", "pass", f"all {len(runs)} runs exited 0", evidence)


def judge_right(runs: Sequence[PocRun], reference: Sequence[PocRun]) -> Criterion:
    ref = next((r for r in reference if r.ok), None)
    if ref is None:
        why = reference[0].error if reference else "no reference run"
        return Criterion("right", "fail", f"the reference did not run ({why}): nothing to compare with")
    if not ref.outputs:
        return Criterion("right", "fail", "the reference recorded no output (does it call ab.record?)")
    compared = [r for r in runs if r.comparisons]
    if not compared:
        return Criterion("right", "fail", "no run recorded an output to compare")
    evidence: list[str] = []
    wrong = 0
    for run in compared:
        bad = [c for c in run.comparisons if c.status != "agree"]
        wrong += bool(bad)
        shown = run.comparisons if run is compared[0] else bad  # run 1 in full, then what went wrong
        evidence += [f"run {run.index}: {_comparison_text(c)}" for c in shown]
    skipped = [r.index for r in runs if r.ok and not r.comparisons]
    if skipped:
        evidence.append(f"runs {skipped} recorded nothing")
    if wrong or skipped:
        return Criterion("right", "fail", f"outputs differ from the reference in {wrong + len(skipped)} of "
                         f"{len(runs)} runs", tuple(evidence))
    names = ", ".join(c.name for c in compared[0].comparisons)
    where = f"in all {len(compared)} runs" if len(compared) > 1 else "in the one run"
    return Criterion("right", "pass", f"{names} match the reference {where}",
                     tuple(evidence))


def _comparison_text(c: OutputComparison) -> str:
    if c.status in ("agree", "differ"):
        agreement = c.argmax_agreement
        argmax = f", argmax agrees on {agreement:.0%} of rows" if agreement is not None else ""
        return (f"{c.name} {c.status}: max abs error {c.max_abs_error or 0:.3g}, {c.mismatched}/{c.elements} "
                f"outside rtol={c.rtol:g} atol={c.atol:g} ({c.dtype_a} vs {c.dtype_b}){argmax}")
    return f"{c.name}: {c.status.replace('_', ' ')}"


def judge_gpu(runs: Sequence[PocRun], telemetry: str, available: bool) -> Criterion:
    if not available:
        return Criterion("on the GPU", "fail", "not shown: no GPU telemetry on this machine",
                         (f"telemetry: {telemetry}",), cause="no-telemetry")
    evidence = [f"telemetry: {telemetry}"]
    idle: list[int] = []
    unread: list[int] = []  # no busy or VRAM value read while it ran: nothing shown either way
    for run in runs:
        g = run.gpu
        if g is None:
            unread.append(run.index)
            evidence.append(f"run {run.index}: no samples")
            continue
        evidence.append(
            f"run {run.index}: busy mean {_pct(g.busy_mean)}, peak {_pct(g.busy_peak)}; VRAM peak "
            f"{_size(g.vram_peak)} of {_size(g.vram_total)} ({g.samples} samples over {g.duration_s:.1f} s)"
        )
        if g.used_gpu is None:
            unread.append(run.index)
        elif not g.used_gpu:
            idle.append(run.index)
    if idle:
        return Criterion("on the GPU", "fail",
                         f"the GPU stayed idle in runs {idle}: did torch see no device?", tuple(evidence),
                         cause="idle", runs=tuple(idle))
    if unread:
        return Criterion("on the GPU", "fail",
                         f"not shown: the telemetry read no busy or VRAM value while runs {unread} ran "
                         "(the run ended before the first sample, or the GPU stopped answering)",
                         tuple(evidence), cause="unread", runs=tuple(unread))
    return Criterion("on the GPU", "pass", "the GPU was busy or held VRAM in every run", tuple(evidence))


def vram_tolerance(thresholds: Thresholds, total: int | None) -> int:
    fraction = int(thresholds.vram_tolerance_fraction * total) if total else 0
    return max(thresholds.vram_tolerance, fraction)


def judge_stable(runs: Sequence[PocRun], thresholds: Thresholds, available: bool) -> Criterion:
    crashed = [r.index for r in runs if not r.ok]
    evidence: list[str] = [f"{len(runs) - len(crashed)} of {len(runs)} runs finished"]
    if crashed:
        evidence.append(f"runs {crashed} failed")
    traced = [r for r in runs if r.trace is not None and r.trace.vram_after is not None]
    befores = [r.trace.vram_before for r in traced if r.trace and r.trace.vram_before is not None]
    baseline = befores[0] if befores else None
    if not available or not traced or baseline is None:
        evidence.append("VRAM not checked: no GPU telemetry (crashes only)")
        status: Status = "fail" if crashed else "pass"
        return Criterion("stable", status, "no crash over the runs (VRAM unchecked)" if status == "pass"
                         else f"{len(crashed)} of {len(runs)} runs failed", tuple(evidence),
                         cause="vram-unchecked" if status == "pass" else "crashed", runs=tuple(crashed))
    total = next((r.trace.vram_total for r in traced if r.trace and r.trace.vram_total), None)
    tolerance = vram_tolerance(thresholds, total)
    afters = [r.trace.vram_after or 0 for r in traced if r.trace]
    held = [a - baseline for a in afters]
    evidence.append(f"VRAM baseline {_size(baseline)} before run 1; tolerance {_size(tolerance)}")
    evidence += [f"after run {r.index}: {_size(a)} ({_signed(h)} held)"
                 for r, a, h in zip(traced, afters, held, strict=True)]
    leaking = [r.index for r, h in zip(traced, held, strict=True) if h > tolerance]
    growing = len(afters) > 1 and all(b > a for a, b in itertools.pairwise(afters)) and (
        afters[-1] - afters[0] > tolerance)
    problems = []
    if crashed:
        problems.append(f"{len(crashed)} of {len(runs)} runs failed")
    if growing:
        problems.append(f"VRAM after each run grows run after run (+{_size(afters[-1] - afters[0])})")
    if leaking:
        problems.append(f"VRAM not back to baseline after runs {leaking}")
    if problems:
        return Criterion("stable", "fail", "; ".join(problems), tuple(evidence))
    return Criterion("stable", "pass", f"no crash; VRAM back to baseline within {_size(tolerance)} after "
                     f"every run", tuple(evidence))


def judge_speed(runs: Sequence[PocRun], reference: Sequence[PocRun], min_speedup: float) -> Criterion:
    steady = [r for r in runs if r.ok and r.index > 1] or [r for r in runs if r.ok]
    ours = _pooled(steady)
    theirs = _pooled([r for r in reference if r.ok])
    if not ours:
        return Criterion("speed", "fail", "no ab.timer region was recorded (time the work with ab.timer)",
                         cause="no-region")
    name = max(ours, key=lambda n: statistics.median(ours[n]))
    ours_s = statistics.median(ours[name])
    evidence = [f"region {name!r}: median {ours_s:.4g} s over {len(ours[name])} sample(s) "
                f"(runs {[r.index for r in steady]})"]
    first = next((r for r in runs if r.index == 1 and r.ok), None)
    first_s = _pooled([first]).get(name) if first is not None and len(runs) > 1 else None
    if first_s:
        evidence.append(f"run 1 (compiles): {statistics.median(first_s):.4g} s")
    tokens = next((r.tokens for r in steady if r.tokens), None)
    rate = f", {tokens / ours_s:.1f} tokens/s" if tokens and ours_s > 0 else ""
    if name not in theirs:
        return Criterion("speed", "fail", f"{name}: {ours_s:.4g} s{rate}; the reference has no such region",
                         tuple(evidence), cause="no-such-region")
    ref_s = statistics.median(theirs[name])
    speedup = ref_s / ours_s if ours_s > 0 else float("inf")
    ref_rate = f", {tokens / ref_s:.1f} tokens/s" if tokens and ref_s > 0 else ""
    evidence.append(f"reference: median {ref_s:.4g} s{ref_rate}")
    evidence.append(f"speed-up {speedup:.2f}x (needed: {min_speedup:g}x)")
    status: Status = "pass" if speedup >= min_speedup else "fail"
    return Criterion("speed", status, f"{name}: {ours_s:.4g} s{rate}, {speedup:.2f}x the reference "
                     f"({'at least' if status == 'pass' else 'below'} {min_speedup:g}x)", tuple(evidence))


def _pooled(runs: Sequence[PocRun]) -> dict[str, list[float]]:
    pooled: dict[str, list[float]] = {}
    for run in runs:
        for timing in run.timings:
            pooled.setdefault(timing.name, []).extend(timing.seconds)
    return {k: v for k, v in pooled.items() if v}


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    own = [line for line in lines if line.startswith("error: ")]
    return (own or lines or [""])[-1][:200]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}%"


def _size(value: int | None) -> str:
    return "n/a" if value is None else format_bytes(value)


def _signed(value: int) -> str:
    return ("-" if value < 0 else "+") + format_bytes(abs(value))
