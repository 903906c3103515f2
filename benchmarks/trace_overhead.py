#!/usr/bin/env python3
"""Added nanoseconds per driver call of our tracing interposer (goal: <= 100 ns).

A C client calls cuDriverGetVersion (a cheap call) N times through the pointer that
cuGetProcAddress_v2 hands out, once against the stand-in driver directly and once with the
interposer first. Prints ns/call for both (the untraced call is the floor) and the difference.
Never asserts on time. ``--smoke``: 20,000 calls, once (seconds: CI checks that it runs).

    python benchmarks/trace_overhead.py [--calls 2000000] [--repeat 5] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

from zluda_runner.core.native import compile_c
from zluda_runner.trace.interposer import build_interposer, interposer_env

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "probe"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="a tiny size, seconds: check that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.repeat = 20_000, 1
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

        def best(env: dict[str, str]) -> float:
            runs = [
                float(
                    subprocess.run(
                        [str(client), str(args.calls)], env=env, capture_output=True, text=True, check=True
                    ).stdout
                )
                for _ in range(args.repeat)
            ]
            return min(runs)

        untraced_ns, traced_ns = best(plain), best(traced)
    print(f"calls per run: {args.calls:,} (best of {args.repeat})")
    print(f"floor, untraced: {untraced_ns:6.2f} ns/call")
    print(f"traced:          {traced_ns:6.2f} ns/call")
    print(f"added:           {traced_ns - untraced_ns:6.2f} ns/call (goal <= 100)")


if __name__ == "__main__":
    main()
