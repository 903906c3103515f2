#!/usr/bin/env python3
"""Wall time of the full driver-probe catalogue against the stand-in libcuda (goal: < 10 s).

The stand-in has a planted crash and a planted hang, so this includes two worker restarts
and one timeout (``--timeout``, default 2 s). Never asserts on time.

    python benchmarks/probe_speed.py [--timeout 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from zluda_runner.core.native import compile_c
from zluda_runner.probe import run_probe
from zluda_runner.probe.cases import CATALOGUE

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "probe"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lib = compile_c(
            [FIXTURES / "standin_cuda.c"], "libcuda.so.1", Path(tmp), args=["-Wl,-soname,libcuda.so.1"]
        )
        started = time.perf_counter()
        report = run_probe(lib, timeout=args.timeout)
        took = time.perf_counter() - started
    print(
        f"{len(CATALOGUE)} cases in {took:.2f} s (timeout {args.timeout:g} s spent once on the planted hang)"
    )
    print(f"excluding the hang's timeout: {took - args.timeout:.2f} s")
    print("summary:", ", ".join(f"{n} {s}" for s, n in report.summary.items()))


if __name__ == "__main__":
    main()
