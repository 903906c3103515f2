"""Launch overhead: median wall time of a trivial command through ``zluda-run`` vs run directly.

    python benchmarks/launch_overhead.py [--runs N] [--command CMD] [--zluda-dir DIR] [--python PY] [--smoke]
    python benchmarks/launch_overhead.py [--runs N] -- LAUNCHER...

Default: builds a stand-in ZLUDA release (zluda_runner.devtools.standin: a stub
libcuda.so.1 and libcublas.so.13) in a temporary folder, and times
``zluda-run --cache-dir TMP --zluda-dir STANDIN -- true`` with the plan cache
warm (a first launch fills it; warm-up runs are discarded) against ``true``.
``--zluda-dir`` uses a real or prepared release instead; ``--python PY`` makes
the plan target PY's torch (the command is still the trivial one). With an
explicit ``-- LAUNCHER`` prefix, that prefix is timed as given. The floor (a
bare Python that imports ``zluda_runner.launch.process`` and runs the command)
is printed too. ``zluda-run`` is the console script next to this interpreter
(not a pyenv/PATH shim, whose own start-up is not ours). Goal: at most 150 ms
added. Prints figures, asserts nothing. ``--smoke``: 3 runs after 1 warm-up (seconds: CI checks that
it runs).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def zluda_run_argv0() -> list[str]:
    script = Path(sys.executable).parent / "zluda-run"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "zluda_runner"]


def build_standin(folder: Path) -> Path:
    from zluda_runner.devtools.standin import build_release, libs_from_spec

    spec = {
        "libcuda.so.1": {"soname": "libcuda.so.1", "links": ["libcuda.so"]},
        "libcublas.so.13": {
            "soname": "libcublas.so.13", "versions": {"libcublas.so.13": ["cublasCreate_v2"]}
        },
    }
    return build_release(libs_from_spec(spec), folder / "zluda", build_dir=folder / "build")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--command", default="true", help="the trivial command (default: true)")
    parser.add_argument("--zluda-dir", help="release folder (default: a stand-in built here)")
    parser.add_argument("--python", help="plan for this interpreter's torch (default: the command)")
    parser.add_argument("--smoke", action="store_true", help="a tiny size, seconds: check that it runs")
    parser.add_argument("launcher", nargs=argparse.REMAINDER, help="-- LAUNCHER prefix")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.warmup = 3, 1
    trivial = shlex.split(args.command)
    work = Path(tempfile.mkdtemp(prefix="zluda-runner-bench-"))
    try:
        prefix = args.launcher[1:] if args.launcher[:1] == ["--"] else args.launcher
        if not prefix:
            zluda_dir = Path(args.zluda_dir) if args.zluda_dir else build_standin(work)
            prefix = [*zluda_run_argv0(), "--cache-dir", str(work / "cache"), "--zluda-dir", str(zluda_dir)]
            if args.python:
                prefix += ["--python", args.python]
            prefix.append("--")
        direct = median_ms(trivial, args.runs, args.warmup)
        floor = median_ms([*FLOOR_PREFIX, *trivial], args.runs, args.warmup)
        through = median_ms([*prefix, *trivial], args.runs, args.warmup)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"runs: {args.runs} (after {args.warmup} warm-up, which also fill the plan cache)")
    print(f"direct   {shlex.join(trivial)}: median {direct:8.1f} ms")
    print(f"floor    python + run_process:   median {floor:8.1f} ms (added {floor - direct:6.1f} ms)")
    print(f"launched via {shlex.join(prefix)}")
    print(f"         {shlex.join(trivial)}: median {through:8.1f} ms")
    print(f"added: {through - direct:8.1f} ms (goal <= 150 ms)")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set, so modules edited since their .pyc was written are "
              "compiled on every launch; unset it (and run once) for the figure a user sees")


if __name__ == "__main__":
    main()
