"""Start-up under Wine: ``zluda-run --help`` and ``zluda-run releases`` on the official Windows CPython,
each beside ``python.exe -c pass`` (the floor) in the same run.

    python benchmarks/wine_start.py [--runs N] [--smoke] [--here]

``releases`` is measured twice: remembered (its memo in the cache's ``commands/`` holds: the warm case a
user who runs it again sees, commands/commandmemo) and derived (its memo removed before each run: the
first run, which derives it and writes the memo). ``--here``: the same figures on this host with the
interpreter running this script (``python -m zluda_runner``), no Wine. Measured at the command memo's
branch (releasesmemo), 9 runs: under Wine 8 floor 44.6 ms CPU, ``releases`` remembered 126.2 ms (2.8x),
derived 471.3 ms (10.6x; 407.7 ms, 9.4x, at 2a097bf before it was remembered); on Linux with CPython 3.11
floor 21.3 ms, remembered 38.0 ms (1.8x), derived 251.0 ms.

The interpreter is the one tests/windows use (tests/windows/winpy.py: PyPI's embeddable CPython 3.13
with zluda-runner installed from a wheel built from this checkout, no torch), started as
``wine64 python.exe -m zluda_runner ...`` with one ``wineserver`` kept for the run. Each figure is the
median of N runs, interleaved with the floor's, after warm-up runs that leave the bytecode written
(``__pycache__``, as a user's interpreter has it after its first start; pip compiles with the host's
Python, which is not this one); CPU time (user+sys of the Wine process, ``os.wait4``) and wall time.
``--no-bytecode``: PYTHONDONTWRITEBYTECODE=1 as well, each start compiling every module again (what
the Wine tests see in an environment that sets it). Issue 28's goal: each <= 3x the floor.

Needs Wine (Debian's wine64) and the Windows wheels (``ZLUDA_RUNNER_WIN_WHEELS``, as tests/windows
do; .ci/run downloads them); without them it says so and exits 0 (``skipped:``). ``--smoke``: 2 runs
after 1 warm-up. Prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.windows.winpy import (  # noqa: E402 - the repository's test harness, from the checkout
    DOWNLOAD_HINT,
    EMBED_SDIST,
    WIN_WHEELS_ENV,
    boot_prefix,
    build_project_wheel,
    find_wine,
    make_python,
    winpath,
)

SKIPPED = "skipped:"


def one_run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """CPU ms (user+sys), wall ms and exit status of one run of ``argv``."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    return (usage.ru_utime + usage.ru_stime) * 1000, wall, os.waitstatus_to_exitcode(status)


def medians(argvs: dict[str, list[str]], runs: int, warmup: int, env: dict[str, str],
            cwd: Path, forget: Path | None = None) -> dict[str, tuple[float, float, set[int]]]:
    """Each command's median CPU and wall ms and the exit codes seen, the runs interleaved; before each run
    of a command named ``...-derived``, the folder ``forget`` (the memos) is removed."""
    cpu: dict[str, list[float]] = {name: [] for name in argvs}
    wall: dict[str, list[float]] = {name: [] for name in argvs}
    codes: dict[str, set[int]] = {name: set() for name in argvs}
    for i in range(warmup + runs):
        for name, argv in argvs.items():
            if name.endswith("-derived") and forget is not None:
                shutil.rmtree(forget, ignore_errors=True)
            c, w, code = one_run(argv, env, cwd)
            codes[name].add(code)
            if i >= warmup:
                cpu[name].append(c)
                wall[name].append(w)
    return {n: (statistics.median(cpu[n]), statistics.median(wall[n]), codes[n]) for n in argvs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="runs per figure (default 7, at least 5)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--no-bytecode", action="store_true",
                        help="PYTHONDONTWRITEBYTECODE=1: every start compiles every module again")
    parser.add_argument("--smoke", action="store_true", help="a tiny size, seconds: check that it runs")
    parser.add_argument("--here", action="store_true", help="this host and interpreter, no Wine")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.warmup = 2, 1
    if args.here:
        here(args)
        return
    wine = find_wine()
    wheels = Path(os.environ.get(WIN_WHEELS_ENV, "") or "/nonexistent")
    if wine is None or not (wheels / EMBED_SDIST).is_file():
        missing = "Wine is not installed (apt-get install -y wine64)" if wine is None else DOWNLOAD_HINT
        print(f"{SKIPPED} {missing}")
        return
    with tempfile.TemporaryDirectory(prefix="zluda-runner-wine-bench-") as tmp:
        work = Path(tmp)
        prefix = work / "prefix"
        prefix.mkdir()
        wine_env = boot_prefix(wine, prefix)
        wheel = build_project_wheel(work / "wheel")
        py = make_python(wine_env, wheels, wheel, work / "python", portable=False)
        env = {k: v for k, v in wine_env.env().items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["ZLUDA_RUNNER_CACHE"] = winpath(work / "cache")
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        python = [wine, str(py.exe)]
        got = medians(commands(python), args.runs, args.warmup, env, py.home,
                      forget=work / "cache" / "commands")
        server = Path(wine).with_name("wineserver")
        if server.exists():
            subprocess.run([str(server), "-k"], env=wine_env.env(), capture_output=True, timeout=60,
                           check=False)
    bytecode = "never written (PYTHONDONTWRITEBYTECODE=1)" if args.no_bytecode else "written by the warm-up"
    print(f"Windows CPython 3.13 under {wine}; median of {args.runs} runs each, interleaved, after "
          f"{args.warmup} warm-up; bytecode {bytecode}")
    report(got, "python.exe")


def commands(python: list[str]) -> dict[str, list[str]]:
    """The floor and each command measured (``releases-derived``: with its memo removed first)."""
    return {"floor": [*python, "-c", "pass"], "help": [*python, "-m", "zluda_runner", "--help"],
            "releases": [*python, "-m", "zluda_runner", "releases"],
            "releases-derived": [*python, "-m", "zluda_runner", "releases"]}


def report(got: dict[str, tuple[float, float, set[int]]], python: str) -> None:
    floor_cpu, floor_wall, _ = got["floor"]
    floor = f"floor  {python} -c pass:"
    print(f"{floor:<32} CPU {floor_cpu:7.1f} ms, wall {floor_wall:7.1f} ms")
    for name, words in (("help", "zluda-run --help"), ("releases", "zluda-run releases (remembered)"),
                        ("releases-derived", "zluda-run releases (derived)")):
        cpu, wall, codes = got[name]
        print(f"{words + ':':<32} CPU {cpu:7.1f} ms, wall {wall:7.1f} ms: {cpu / floor_cpu:4.1f}x / "
              f"{wall / floor_wall:4.1f}x the floor (goal <= 3x; exit {', '.join(map(str, sorted(codes)))})")


def here(args: argparse.Namespace) -> None:
    """The figures on this host with this interpreter (``python -m zluda_runner``), its own cache."""
    with tempfile.TemporaryDirectory(prefix="zluda-runner-start-bench-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["ZLUDA_RUNNER_CACHE"] = str(work / "cache")
        env["PYTHONPATH"] = str(REPO)
        if args.no_bytecode:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        got = medians(commands([sys.executable]), args.runs, args.warmup, env, work,
                      forget=work / "cache" / "commands")
    print(f"{sys.executable} ({sys.version.split()[0]}) on this host; median of {args.runs} runs each, "
          f"interleaved, after {args.warmup} warm-up")
    report(got, "python")


if __name__ == "__main__":
    main()
