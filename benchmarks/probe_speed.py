#!/usr/bin/env python3
"""Probe speed: the full driver catalogue on the stand-in libcuda (goal: under 10 s excluding the
planted hang) and the OpInfo torch-op probe's ops per second on the CPU. Prints, never asserts.

The stand-in with planted gaps costs one worker restart after the planted crash and one timeout
(``--timeout``, default 2 s) for the planted hang; the gap-free build shows the catalogue alone.
The floors beside them: a Python that loads the stand-in and calls cuInit (what the probe's worker
process pays before its first case), and a Python that imports torch (the op probe's worker).
``--smoke``: a 0.5 s timeout and one op in float32 (seconds: CI checks that it runs).

    python benchmarks/probe_speed.py [--timeout 2] [--no-torch] [--ops PATTERN] [--dtypes float32] [--smoke]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zluda_runner.core.native import compile_c
from zluda_runner.probe.cases import CATALOGUE
from zluda_runner.probe.runner import run_probe

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "probe"


def floor_s(code: str, *args: str) -> float:
    """Wall seconds of a fresh Python running ``code``."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *args], check=True)
    return time.perf_counter() - started


def driver_catalogue(timeout: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for label, flags in (("planted gaps", []), ("no gaps", ["-DSTANDIN_NO_GAPS"])):
            out = Path(tmp) / label.replace(" ", "-")
            out.mkdir()
            lib = compile_c(
                [FIXTURES / "standin_cuda.c"], "libcuda.so.1", out, args=[*flags, "-Wl,-soname,libcuda.so.1"]
            )
            started = time.perf_counter()
            report = run_probe(lib, timeout=timeout)
            took = time.perf_counter() - started
            hangs = len(report.by_status("timeout"))
            called = {c.function for case in report.cases for c in case.calls}
            print(
                f"driver catalogue, stand-in with {label}: {len(CATALOGUE)} cases, {len(called)} distinct "
                f"functions, {took:.2f} s; excluding {hangs} planted hang(s) at {timeout:g} s: "
                f"{took - hangs * timeout:.2f} s"
            )
            print("  summary:", ", ".join(f"{n} {s}" for s, n in report.summary.items()))
        took = floor_s("import ctypes, sys; ctypes.CDLL(sys.argv[1]).cuInit(0)", str(lib))
        print(f"floor, one Python that loads the stand-in and calls cuInit: {took:.2f} s")


def torch_ops(ops: str, dtypes: str) -> None:
    missing = [m for m in ("torch", "numpy", "expecttest") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"torch-op probe: skipped ({', '.join(missing)} not installed)")
        return
    from zluda_runner.probe.opinfo_probe import run_opinfo_probe

    started = time.perf_counter()
    report = run_opinfo_probe(
        sys.executable,
        os.environ,
        device="cpu",
        dtypes=dtypes.split(","),
        ops=[p for p in ops.split(",") if p],
    )
    took = time.perf_counter() - started
    ran = [c for c in report.cases if c.status not in ("skipped", "unsupported")]
    print(
        f"torch-op probe (OpInfo, cpu vs float64, {dtypes}): {len(report.cases)} op x dtype cases, "
        f"{len(ran)} compared, {took:.1f} s wall incl. interpreter start: {len(ran) / took:.1f} compared/s"
    )
    print("  summary:", ", ".join(f"{n} {s}" for s, n in report.summary.items()))
    print(f"floor, one Python that imports torch: {floor_s('import torch'):.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--ops", default="")
    parser.add_argument("--dtypes", default="float32,float16,bfloat16")
    parser.add_argument("--smoke", action="store_true", help="a tiny size, seconds: check that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.timeout, args.ops, args.dtypes = 0.5, "add", "float32"
    driver_catalogue(args.timeout)
    if not args.no_torch:
        torch_ops(args.ops, args.dtypes)


if __name__ == "__main__":
    main()
