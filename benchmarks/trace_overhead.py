#!/usr/bin/env python3
"""Added CPU nanoseconds per driver call of our tracing interposer (goal: <= 8 ns).

A C client calls cuDriverGetVersion (a cheap call) N times through the pointer that
cuGetProcAddress_v2 hands out and prints the CPU time (user+sys) per call over that loop. It runs
against the stand-in driver directly (the floor) and with the interposer first, the two alternating
in the same run; prints the median of each and the difference. Never asserts on time.
``--smoke``: 20,000 calls, 3 runs each (seconds: CI checks that it runs).

    python benchmarks/trace_overhead.py [--calls 2000000] [--repeat 11] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from zluda_runner.core.native import compile_c
from zluda_runner.trace.interposer import build_interposer, interposer_env

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "probe"
GOAL_NS = 8.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=11, help="runs of each (the median is printed)")
    parser.add_argument("--smoke", action="store_true", help="a tiny size, seconds: check that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.repeat = 20_000, 3
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        driver = compile_c(
            [FIXTURES / "standin_cuda.c"],
            "libcuda.so.1",
            out,
            args=["-DSTANDIN_NO_GAPS", "-Wl,-soname,libcuda.so.1"],
        )
        client = compile_c([FIXTURES / "bench_client.c"], "bench_client", out, shared=False, args=["-ldl"])
        interposer = build_interposer(out / "cache")
        (out / "counts").mkdir()
        plain = {**os.environ, "LD_LIBRARY_PATH": str(driver.parent)}
        traced = interposer_env(interposer, driver, out / "counts", os.environ)

        def once(env: dict[str, str]) -> float:
            done = subprocess.run(
                [str(client), str(args.calls)], env=env, capture_output=True, text=True, check=True
            )
            return float(done.stdout)

        untraced: list[float] = []
        traced_runs: list[float] = []
        for _ in range(args.repeat):  # alternating, so that a change in machine load falls on both
            untraced.append(once(plain))
            traced_runs.append(once(traced))
    untraced_ns, traced_ns = statistics.median(untraced), statistics.median(traced_runs)
    print(f"calls per run: {args.calls:,}; CPU time (user+sys) per call, median of {args.repeat} runs each")
    for label, median, runs in (("floor, untraced:", untraced_ns, untraced),
                                ("traced:         ", traced_ns, traced_runs)):
        print(f"{label} {median:6.2f} ns/call (min {min(runs):.2f}, max {max(runs):.2f})")
    print(f"added:           {traced_ns - untraced_ns:6.2f} ns/call (goal <= {GOAL_NS:g})")


if __name__ == "__main__":
    main()
