"""Launch overhead: median wall time of a trivial command through a launcher vs run directly.

    python benchmarks/launch_overhead.py [--runs N] [--command CMD] -- LAUNCHER...

LAUNCHER is the prefix to time, e.g. ``zluda-run --zluda-dir /opt/zluda --``; the
trivial command (default ``true``) is appended to it. Without a LAUNCHER the
prefix is a bare Python process that imports ``zluda_runner.launch.process``
and calls ``run_process``: the floor any ``zluda-run`` launch pays (interpreter
start, imports, spawn, wait). Runs are warm (a few discarded first).
Goal for ``zluda-run`` with a cached plan: at most 150 ms added. Prints figures,
asserts nothing.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import time

FLOOR_PREFIX = [
    sys.executable,
    "-c",
    "import os, sys\n"
    "from zluda_runner.launch.process import run_process\n"
    "sys.exit(run_process(sys.argv[1:], os.environ))\n",
]


def median_ms(argv: list[str], runs: int, warmup: int) -> float:
    times = []
    for i in range(warmup + runs):
        start = time.perf_counter()
        code = subprocess.run(argv, stdin=subprocess.DEVNULL, check=False).returncode
        elapsed = time.perf_counter() - start
        if code != 0:
            raise SystemExit(f"{shlex.join(argv)} exited with {code}")
        if i >= warmup:
            times.append(elapsed * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--command", default="true", help="the trivial command (default: true)")
    parser.add_argument("launcher", nargs=argparse.REMAINDER, help="-- LAUNCHER prefix")
    args = parser.parse_args()
    prefix = args.launcher[1:] if args.launcher[:1] == ["--"] else args.launcher
    prefix = prefix or FLOOR_PREFIX
    trivial = shlex.split(args.command)
    direct = median_ms(trivial, args.runs, args.warmup)
    through = median_ms([*prefix, *trivial], args.runs, args.warmup)
    label = "run_process floor (python -c ...)" if prefix is FLOOR_PREFIX else shlex.join(prefix)
    print(f"runs: {args.runs} (after {args.warmup} warm-up)")
    print(f"direct   {shlex.join(trivial)}: median {direct:8.1f} ms")
    print(f"launched via {label}: median {through:8.1f} ms")
    print(f"added: {through - direct:8.1f} ms (goal <= 150 ms)")


if __name__ == "__main__":
    main()
