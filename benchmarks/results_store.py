"""How fast is the results store? Prints figures; asserts nothing.

    python benchmarks/results_store.py [--db URL] [--runs 1000] [--ops 500] [--repeat 5] [--smoke]

Default store: a fresh SQLite file in a temporary folder (``--db postgresql://...`` measures a
server; give an empty database).

1. record: ``record_report("torch-ops", ...)`` of a 500-op torch probe report (every op with its
   errors, 3 % mismatching), opening the store each time as a command does; median of ``--repeat``.
2. matrix: ``build_matrix`` over 1,000 stored runs (a mix of torch-op, probe and A/B runs across
   6 releases x 4 GPU targets x 3 torch builds), plus rendering it as text and as HTML.
Goal: under 1 s each. The floor beside them: SQLite alone (Python's sqlite3) storing the same runs and
items in one transaction and counting them per release x GPU x torch build.
3. the commands, CPU time (user + sys) of ``zluda-run results import`` of a bundle of ``--cli-runs``
   runs x 50 items (median of 3, fresh stores; and of 10x that many, once), and of ``results list`` /
   ``results matrix`` of that store (median of ``--repeat``, at least 9); the matrix built in the process
   at both sizes, and their ratio.
   Goals: import of 1,000 runs <= 1 s, list and matrix <= 150 ms, the matrix of 10x the runs <= 10x.
   The floor beside them: ``python -c pass``.
``--smoke``: 40 runs of 20 ops, once (seconds; CI runs it so that the benchmark keeps working).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zluda_runner.abtest.model import AbReport, OutputComparison, SideSummary, TimingComparison, TimingStats
from zluda_runner.core.settings import Settings
from zluda_runner.probe.model import KIND_TORCH, CaseResult, ProbeReport
from zluda_runner.report.matrix_html import render_html
from zluda_runner.report.results_view import render_matrix as render_text
from zluda_runner.results.backends import make_store
from zluda_runner.results.matrix import build_matrix
from zluda_runner.results.recording import build_run, record_report
from zluda_runner.results.schema import ResultRow, RunRecord, canonical_json, content_id, summarise

RELEASES = ["fork-3.9.4", "fork-3.9.5", "fork-3.9.6", "upstream-v4", "upstream-v5", "upstream-v6"]
GFX = ["gfx1030", "gfx1100", "gfx1101", "gfx1201"]
TORCH = [("2.4.1+cu118", 11), ("2.7.0+cu126", 12), ("2.14.1+cu130", 13)]


def torch_report(ops: int, seed: int) -> ProbeReport:
    cases = [
        CaseResult(
            id=f"op{i:04d}.{('fp16', 'bf16', 'fp32')[i % 3]}",
            area="torch",
            title=f"op {i}",
            status="mismatch" if (i * 7 + seed) % 33 == 0 else "pass",
            detail="",
            max_abs_err=1e-4 * (i % 10),
            max_rel_err=1e-5 * (i % 10),
            duration_s=0.002,
        )
        for i in range(ops)
    ]
    return ProbeReport(kind=KIND_TORCH, target="python", cases=tuple(cases))


def ab_report(seed: int) -> AbReport:
    a, b = TimingStats(5, 1.0 + seed % 5 / 10, 0.9, 1.6), TimingStats(5, 1.0, 0.9, 1.1)
    return AbReport(
        a=SideSummary("A", ("zluda-run", "python", "infer.py")),
        b=SideSummary("B", ("python", "infer.py")),
        outputs=(OutputComparison("logits", "agree" if seed % 4 else "differ"),),
        timings=(TimingComparison("generate", a, b, a.median_s, "B" if a.median_s > 1.05 else "same"),),
        agree=bool(seed % 4),
        faster="B",
    )


def fill(url: str, runs: int, ops: int) -> tuple[float, list[RunRecord]]:
    started = time.perf_counter()
    records = []
    for n in range(runs):
        version, major = TORCH[n % 3]
        kind = ("torch-ops", "ab", "torch-ops", "probe")[n % 4]
        report: object = ab_report(n) if kind == "ab" else torch_report(ops if kind == "torch-ops" else 60, n)
        records.append(
            build_run(
                kind,
                report,
                command=["zluda-run", kind],
                release={"id": RELEASES[n % 6]},
                target={"torch_version": version, "cuda_major": major},
                host={"gfx": GFX[(n // 6) % 4]},
                started_at=f"2025-{1 + n % 12:02d}-01T00:00:{n % 60:02d}.{n:06d}Z",
            )
        )
    with make_store(url).open() as store:
        for start in range(0, len(records), 100):
            store.insert_runs(records[start : start + 100])
    return time.perf_counter() - started, records


def floor(path: Path, records: list[RunRecord]) -> tuple[float, float, int]:
    """(seconds to store, seconds to count, items) for SQLite alone: each run and each of its items one
    row of JSON text (made before the clock starts), in one transaction; then the runs and their failed
    counts per release x GPU x torch build."""
    runs = [(n, r.release_id, r.gfx, r.torch_build, r.count("failed"), json.dumps(r.content()))
            for n, r in enumerate(records)]
    items = [(n, i.item, i.ok, json.dumps(i.to_dict())) for n, r in enumerate(records) for i in r.items]
    t0 = time.perf_counter()
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE runs (id INTEGER PRIMARY KEY, release TEXT, gfx TEXT, torch TEXT, "
                     "failed INTEGER, doc TEXT);"
                     "CREATE TABLE items (run INTEGER, item TEXT, ok INTEGER, doc TEXT);")
    with db:
        db.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?)", runs)
        db.executemany("INSERT INTO items VALUES (?, ?, ?, ?)", items)
    t1 = time.perf_counter()
    db.execute("SELECT release, gfx, torch, count(*), sum(failed) FROM runs "
               "GROUP BY release, gfx, torch").fetchall()
    t2 = time.perf_counter()
    db.close()
    return t1 - t0, t2 - t1, len(items)


def write_bundle(path: Path, runs: int, items: int = 50) -> None:
    """A bundle of ``runs`` runs of ``items`` items each (3 % failing), as ``results export`` writes it."""
    with path.open("w", encoding="utf-8") as out:
        header = {"format": "zluda-runner-results", "version": 1, "runs": runs, "schema": 2}
        out.write(json.dumps(header) + "\n")
        for n in range(runs):
            version, major = TORCH[n % 3]
            bad = [(i * 7 + n) % 33 == 0 for i in range(items)]
            its = [ResultRow(f"op{i:04d}", "mismatch" if bad[i] else "pass", not bad[i], "",
                              {"max_abs_err": 1e-4 * (i % 10)}) for i in range(items)]
            run = RunRecord(("torch-ops", "probe", "ab", "verify-load")[n % 4],
                            f"2025-{1 + n % 12:02d}-01T00:00:{n % 60:02d}.{n:06d}Z",
                            {"gfx": GFX[(n // 6) % 4]},
                            {"id": RELEASES[n % 6]}, {"torch_version": version, "cuda_major": major},
                            ["zluda-run", "probe", str(n)], dict(summarise(its)), its)
            out.write(canonical_json({"run": {**run.to_dict(), "run_id": content_id(run)}}) + "\n")


def cpu_of(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + sys) a command took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def commands(tmp: Path, runs: int, repeat: int) -> None:
    """The commands' CPU time at ``runs`` and 10x ``runs``, with ``python -c pass`` beside them."""
    zluda_run = [sys.executable, "-m", "zluda_runner"]
    ms = 1000
    # byte-compiled once, as an installed package is (into the temporary folder: PYTHONDONTWRITEBYTECODE,
    # set in CI and here, would have every command compile its modules again, in its figure)
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    plain["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    pass_ms = statistics.median(cpu_of([sys.executable, "-c", "pass"], plain) for _ in range(repeat)) * ms
    print(f"floor: python -c pass {pass_ms:.0f} ms CPU (median of {repeat})")
    floor = f"floor {pass_ms:.0f} ms"
    built = {}
    for size in (runs, runs * 10):
        bundle, db = tmp / f"bundle{size}.jsonl", tmp / f"cli{size}.db"
        write_bundle(bundle, size)
        env = dict(plain, ZLUDA_RUNNER_RESULTS_DB=str(db), ZLUDA_RUNNER_CACHE=str(tmp / "cache"))
        warm = {k: v for k, v in env.items() if k != "ZLUDA_RUNNER_RESULTS_DB"}  # the cache's store: none
        if size == runs:  # each command once, byte-compiled, in no figure
            cpu_of([*zluda_run, "results", "list"], warm)
            cpu_of([*zluda_run, "results", "matrix"], warm)
            cpu_of([*zluda_run, "results", "import", str(bundle)], dict(warm, ZLUDA_RUNNER_RESULTS_DB=str(
                tmp / "warm.db")))
        times = []
        for _ in range(3 if size == runs else 1):  # each into a fresh store
            for stale in tmp.glob(f"cli{size}.db*"):
                stale.unlink()
            times.append(cpu_of([*zluda_run, "results", "import", str(bundle)], env))
        imported = statistics.median(times)
        goal = "goal <= 1000 ms; " if size == runs else ""
        print(f"results import of {size} runs x 50 items ({bundle.stat().st_size / 2**20:.1f} MiB): "
              f"{imported * ms:.0f} ms CPU ({goal}{floor}; median of {len(times)})")
        for what in ("list", "matrix"):
            took = statistics.median(cpu_of([*zluda_run, "results", what], env) for _ in range(repeat))
            goal = "goal <= 150 ms; " if size == runs else ""
            print(f"results {what} of {size} runs: median {took * ms:.0f} ms CPU ({goal}{floor})")
        with make_store(str(db)).open() as store:
            times = []
            for _ in range(repeat):
                t0 = time.process_time()
                build_matrix(store)
                times.append(time.process_time() - t0)
        built[size] = statistics.median(times)
        print(f"build_matrix of {size} runs in the process: median {built[size] * ms:.1f} ms CPU")
    ratio = built[runs * 10] / max(built[runs], 1e-9)
    print(f"matrix of {runs * 10} runs / of {runs}: {ratio:.1f}x (goal <= 10x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="store URL (default: a fresh SQLite file)")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--cli-runs", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="a tiny size, seconds: check that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.ops, args.repeat, args.cli_runs = 40, 20, 1, 20
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(cache_dir=Path(tmp))
        record_url = args.db or str(Path(tmp) / "record.db")
        matrix_url = args.db or str(Path(tmp) / "matrix.db")
        report = torch_report(args.ops, 0)
        with make_store(record_url).open():
            pass  # the schema exists, as after the first run on a machine
        times = []
        for n in range(args.repeat):
            t0 = time.perf_counter()
            out = record_report(
                "torch-ops",
                report,
                settings=settings,
                command=["zluda-run", "probe", str(n)],
                db_url=record_url,
                host={"gfx": "gfx1100"},
            )
            times.append(time.perf_counter() - t0)
            if not out.recorded:
                raise SystemExit(f"recording failed: {out.warning}")
        print(
            f"record a {args.ops}-op torch probe run: median {statistics.median(times) * 1000:.1f} ms "
            f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}; {args.repeat} runs; goal < 1000 ms)"
        )

        fill_s, records = fill(matrix_url, args.runs, args.ops)
        print(f"store {args.runs} runs (batches of 100): {fill_s:.2f} s")
        store_s, count_s, items = floor(Path(tmp) / "floor.db", records)
        print(f"floor, SQLite alone: store the {args.runs} runs and {items} items in one transaction "
              f"{store_s:.2f} s; count them per release x GPU x torch build {count_s * 1000:.1f} ms")
        with make_store(matrix_url).open() as store:
            timings = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                matrix = build_matrix(store)
                t1 = time.perf_counter()
                text, page = render_text(matrix), render_html(matrix)
                timings.append((t1 - t0, time.perf_counter() - t1))
        build = statistics.median(t[0] for t in timings)
        render = statistics.median(t[1] for t in timings)
        failing = sum(len(c.failing) for c in matrix.cells)
        print(
            f"build the matrix from {matrix.runs} stored runs: median {build * 1000:.1f} ms "
            f"({len(matrix.cells)} cells, {failing} failing items drilled down; goal < 1000 ms)"
        )
        print(
            f"render it: median {render * 1000:.1f} ms (text {len(text)} chars, HTML {len(page) // 1024} KiB)"
        )

        if not args.db:
            commands(Path(tmp), args.cli_runs, args.repeat)


if __name__ == "__main__":
    main()
