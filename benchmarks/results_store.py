"""How fast is the results store? Prints figures; asserts nothing.

    python benchmarks/results_store.py [--db URL] [--runs 1000] [--ops 500] [--repeat 9] [--cli-runs 1000]
                                       [--sqlite-only] [--smoke]

Default store: a fresh SQLite file in a temporary folder (``--db postgresql://...`` measures a
server for parts 1 and 2; give an empty database).

1. record: ``record_report("torch-ops", ...)`` of a 500-op torch probe report (every op with its
   errors, 3 % mismatching), opening the store each time as a command does; median of ``--repeat``.
2. matrix: ``build_matrix`` over 1,000 stored runs (a mix of torch-op, probe and A/B runs across
   6 releases x 4 GPU targets x 3 torch builds), plus rendering it as text and as HTML.
Goal: under 1 s each. The floor beside them: SQLite alone (Python's sqlite3) storing the same runs and
items in one transaction and counting them per release x GPU x torch build.
3. the commands as a user runs them (the ``zluda-run`` script beside this interpreter, its modules
   byte-compiled as an installed package's are), CPU time (user + sys), each the median of ``--repeat``
   (at least 9 for the goals): ``results import`` of a bundle of ``--cli-runs`` runs x 50 items, each
   into a fresh store (and of 10x that many); ``results list``, ``matrix`` and ``show`` of that store
   with their output on an 80-column pseudo-terminal (the views fit it, as they do for a user); the
   matrix built in the process at both sizes, and their ratio. On SQLite, then on a PostgreSQL server the
   benchmark starts (initdb + pg_ctl, as tests/results do; skipped when PostgreSQL is not installed),
   where the server's CPU during each command is printed beside the command's.
   Goals: import of 1,000 runs <= 1 s, list and matrix <= 150 ms, the matrix of 10x the runs <= 10x.
   The floors beside them: ``python -c pass``, and for PostgreSQL ``python -c 'import psycopg'`` (the
   driver's own import, which every command against a server pays).
``--smoke``: 40 runs of 20 ops, 20 runs in the commands, once each (seconds; the suite runs it so that
the benchmark keeps working: tests/arch/test_benchmarks_run.py).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pty
import resource
import shutil
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def _drain(fd: int) -> None:
    """Read a pseudo-terminal until its last writer closed it (the command's output, thrown away)."""
    with contextlib.suppress(OSError):
        while os.read(fd, 1 << 16):
            pass


def cpu_of(argv: list[str], env: dict[str, str], *, terminal: bool = False) -> float:
    """CPU seconds (user + sys) a command took; ``terminal``: its output goes to a pseudo-terminal of
    80 columns, as when a user runs it (the views fit the terminal's width), else to /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if terminal:
        main_fd, side_fd = pty.openpty()
        fcntl.ioctl(side_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        reader = threading.Thread(target=_drain, args=(main_fd,))
        reader.start()
        try:
            subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=side_fd, check=True)
        finally:
            os.close(side_fd)
            reader.join()
            os.close(main_fd)
    else:
        subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


class Backend:
    """Where the commands' stores are made: SQLite files in a folder, or databases of a PostgreSQL server
    this benchmark started (whose CPU is counted too: the server does part of the work)."""

    def __init__(self, tmp: Path, server: Any = None) -> None:
        self.tmp, self.server, self._n = tmp, server, 0

    @property
    def name(self) -> str:
        return "PostgreSQL" if self.server is not None else "SQLite"

    def fresh(self) -> str:
        self._n += 1
        if self.server is not None:
            return str(self.server.new_database())
        return str(self.tmp / f"store{self._n}" / "results.db")

    def cpu_of(self, argv: list[str], env: dict[str, str], *, terminal: bool = False) -> tuple[float, float]:
        """(the command's CPU, the server's CPU meanwhile: 0 for SQLite)."""
        if self.server is None:
            return cpu_of(argv, env, terminal=terminal), 0.0
        server = self.server.cpu_seconds()
        ours = cpu_of(argv, env, terminal=terminal)
        time.sleep(0.2)  # the connection's backend ends after the command: its time counted too
        return ours, self.server.cpu_seconds() - server


    def matrix_cpu(self, dbs: list[str], repeat: int) -> list[float]:
        """CPU seconds of one ``build_matrix`` in this process of each store in ``dbs``: the median of
        ``repeat`` rounds, the stores taking turns in each; with a server, each round builds 20 times and its
        CPU meanwhile is added (the server's is read in clock ticks: one build is below the tick)."""
        builds = 1 if self.server is None else 20
        taken: list[list[float]] = [[] for _ in dbs]
        with contextlib.ExitStack() as stack:
            stores = [stack.enter_context(make_store(db).open()) for db in dbs]
            for _ in range(repeat):
                for store, times in zip(stores, taken, strict=True):
                    server = self.server.cpu_seconds() if self.server is not None else 0.0
                    t0 = time.process_time()
                    for _ in range(builds):
                        build_matrix(store)
                    ours = time.process_time() - t0
                    if self.server is not None:
                        time.sleep(0.05)
                        ours += self.server.cpu_seconds() - server
                    times.append(ours / builds)
        return [statistics.median(times) for times in taken]


def zluda_run_command() -> list[str]:
    """``zluda-run`` as installed beside this interpreter (the console script a user runs), else
    ``python -m zluda_runner``."""
    script = Path(sys.executable).with_name("zluda-run")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "zluda_runner"]


def commands(tmp: Path, runs: int, repeat: int, backend: Backend) -> None:
    """The commands' CPU time at ``runs`` and 10x ``runs``, with ``python -c pass`` beside them: each the
    median of ``repeat`` runs (each import into a fresh store; of 10x the runs, a third as many); list, show
    and matrix on a terminal. The sizes and the floor take turns in every round, so that a machine whose
    load changes meanwhile weighs on each alike (the ratio of the two sizes above all)."""
    zluda_run = zluda_run_command()
    ms = 1000
    tmp.mkdir(parents=True, exist_ok=True)
    # byte-compiled once, as an installed package is (into the temporary folder: PYTHONDONTWRITEBYTECODE,
    # set in CI and here, would have every command compile its modules again, in its figure); no COLUMNS:
    # the views fit the terminal they are shown on
    plain = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "COLUMNS", "LINES")}
    plain["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    env = dict(plain, ZLUDA_RUNNER_CACHE=str(tmp / "cache"))
    print(f"{backend.name}: {' '.join(zluda_run)}; CPU = user + sys, median of {repeat}")
    floors = {"python -c pass": [sys.executable, "-c", "pass"]}
    if backend.server is not None:  # the driver's own import, which every command against the server pays
        floors["python -c 'import psycopg'"] = [sys.executable, "-c", "import psycopg"]
    sizes = (runs, runs * 10)
    bundles = {size: tmp / f"bundle{size}.jsonl" for size in sizes}
    for size, bundle in bundles.items():
        write_bundle(bundle, size)
    warm = dict(env, ZLUDA_RUNNER_RESULTS_DB=backend.fresh())  # each once, byte-compiled, in no figure
    for argv in ([*zluda_run, "results", "import", str(bundles[runs])], [*zluda_run, "results", "list"],
                 [*zluda_run, "results", "matrix"], *floors.values()):
        cpu_of(argv, warm)
    floor_cpu: dict[str, list[float]] = {what: [] for what in floors}
    imports: dict[int, list[tuple[float, float]]] = {size: [] for size in sizes}
    stores: dict[int, str] = {}
    for n in range(repeat):
        for what, argv in floors.items():
            floor_cpu[what].append(cpu_of(argv, plain))
        for size in sizes:
            if size == runs or n < max(1, repeat // 3):
                stores[size] = backend.fresh()
                imports[size].append(backend.cpu_of([*zluda_run, "results", "import", str(bundles[size])],
                                                    dict(env, ZLUDA_RUNNER_RESULTS_DB=stores[size])))
    shown = []
    for what, taken in floor_cpu.items():
        print(f"  floor: {what} {statistics.median(taken) * ms:.0f} ms CPU")
        shown.append(f"{what.split()[-1].strip(chr(39))} {statistics.median(taken) * ms:.0f} ms")
    floor = f"; floor {', '.join(shown)}"
    server_note = " + the server's" if backend.server is not None else ""
    for size in sizes:
        goal = "goal <= 1000 ms" if size == runs else "no goal"
        print(f"  results import of {size} runs x 50 items ({bundles[size].stat().st_size / 2**20:.1f} MiB): "
              f"{_figure(imports[size], server_note)} ({goal}{floor}; median of {len(imports[size])})")
    views: dict[tuple[int, str], list[tuple[float, float]]] = {}
    shows = {}
    for size, db in stores.items():
        with make_store(db).open() as store:
            shows[size] = store.list_runs(limit=1)[0].run_id[:12]
    for _ in range(repeat):
        for size in sizes:
            for words in (["list"], ["matrix"], ["show", shows[size]]):
                store_env = dict(env, ZLUDA_RUNNER_RESULTS_DB=stores[size])
                views.setdefault((size, words[0]), []).append(
                    backend.cpu_of([*zluda_run, "results", *words], store_env, terminal=True))
    for (size, what), viewed in views.items():
        goal = "goal <= 150 ms" if size == runs and what != "show" else "no goal"
        print(f"  results {what} of {size} runs, on a terminal: {_figure(viewed, server_note)} "
              f"({goal}{floor})")
    built = backend.matrix_cpu([stores[size] for size in sizes], repeat)
    whose = " (this process's + the server's)" if backend.server is not None else ""
    for size, took in zip(sizes, built, strict=True):
        print(f"  build_matrix of {size} runs in the process: {took * ms:.1f} ms CPU{whose}")
    print(f"  matrix of {runs * 10} runs / of {runs}: {built[1] / max(built[0], 1e-9):.1f}x (goal <= 10x)")


def _figure(times: list[tuple[float, float]], server_note: str) -> str:
    """``N ms CPU`` (the command's median), with the server's median beside it when there is one."""
    ours = statistics.median(t[0] for t in times) * 1000
    if not server_note:
        return f"{ours:.0f} ms CPU"
    server = statistics.median(t[1] for t in times) * 1000
    return f"{ours:.0f} ms CPU{server_note} {server:.0f} ms"


@contextlib.contextmanager
def postgres_server() -> Iterator[Any]:
    """A throw-away PostgreSQL server (tests/results/pgserver.py), or None when none can start here."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.results.pgserver import PgServer, pg_bindir, run_as_postgres

    bindir, run_as = pg_bindir(), run_as_postgres()
    if bindir is None or run_as is None:
        yield None
        return
    root = Path(tempfile.mkdtemp(prefix="zr-pg-"))  # not under ``tmp``: the server's user must reach it
    try:
        server = PgServer(bindir, root, run_as)
        server.start()
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="store URL (default: a fresh SQLite file)")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--cli-runs", type=int, default=1000)
    parser.add_argument("--sqlite-only", action="store_true", help="the commands on SQLite only")
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
            f"wall clock (min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}; {args.repeat} runs; "
            "goal < 1000 ms)"
        )

        fill_s, records = fill(matrix_url, args.runs, args.ops)
        print(f"build {args.runs} runs and store them (batches of 100): {fill_s:.2f} s wall clock")
        store_s, count_s, items = floor(Path(tmp) / "floor.db", records)
        print(f"floor, SQLite alone: store the {args.runs} runs and {items} items in one transaction "
              f"{store_s:.2f} s; count them per release x GPU x torch build {count_s * 1000:.1f} ms "
              "(wall clock)")
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
            f"build the matrix from {matrix.runs} stored runs: median {build * 1000:.1f} ms wall clock "
            f"({len(matrix.cells)} cells, {failing} failing items drilled down; goal < 1000 ms)"
        )
        print(
            f"render it: median {render * 1000:.1f} ms wall clock (text {len(text)} chars, "
            f"HTML {len(page) // 1024} KiB)"
        )

        if args.db:
            return
        commands(Path(tmp), args.cli_runs, args.repeat, Backend(Path(tmp) / "sqlite"))
        if args.sqlite_only:
            return
        with postgres_server() as server:
            if server is None:
                print("PostgreSQL: not measured (no initdb/pg_ctl here; apt-get install postgresql)")
                return
            commands(Path(tmp) / "pg", args.cli_runs, args.repeat, Backend(Path(tmp) / "pg", server))


if __name__ == "__main__":
    main()
