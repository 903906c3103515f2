"""Start-up cost: CPU time (user+sys) of ``zluda-run``'s launch, ``--help`` and ``import zluda_runner``.

    python benchmarks/launch_overhead.py [--runs N] [--zluda-dir DIR] [--python PY] [--smoke]

Each figure is the median CPU time (user+sys of the child and what it waited for, from ``os.wait4``)
of N runs, the runs of every figure interleaved with those of its floor in this one run, so a loaded
machine weighs on both alike (issue 28's goals):

- launch: ``zluda-run --cache-dir TMP --zluda-dir R -- PY -c pass`` with the plan cache warm (the
  warm-up runs fill it) over ``PY -c pass`` (the floor); goal <= 40 ms added; and the same launch in
  its other form, the workload's first word first (``zluda-run --cache-dir TMP --zluda-dir R PY -c pass``);
- ``zluda-run --help``; goal <= 100 ms (the floor: the runner's ``python -c pass``);
- ``python -c "import zluda_runner"`` over ``python -c pass``; goal <= 10 ms added.

R is a stand-in ZLUDA release (zluda_runner.devtools.standin: a stub libcuda.so.1 and
libcublas.so.13) built here unless ``--zluda-dir`` names one; PY is a bare virtual environment built
here whose stand-in torch (a version.py of a CUDA build and a torch/lib/libtorch_cuda.so that needs
libcublas.so.13) is never imported, unless ``--python`` names an interpreter with a CUDA torch.
``zluda-run`` is the console script next to this interpreter (not a pyenv/PATH shim, whose own
start-up is not ours). Prints figures, asserts nothing. ``--smoke``: 3 runs after 1 warm-up (seconds:
CI checks that it runs).
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
from pathlib import Path

PASS = ["-c", "pass"]


def cpu_ms(argv: list[str], env: dict[str, str]) -> float:
    """User+sys CPU milliseconds of one run of ``argv`` (and of the children it waited for)."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} exited with {proc.returncode}")
    return (usage.ru_utime + usage.ru_stime) * 1000


def medians(argvs: dict[str, list[str]], runs: int, warmup: int, env: dict[str, str]) -> dict[str, float]:
    """The median CPU ms of each command, their runs interleaved (warm-up runs discarded)."""
    times: dict[str, list[float]] = {name: [] for name in argvs}
    for i in range(warmup + runs):
        for name, argv in argvs.items():
            ms = cpu_ms(argv, env)
            if i >= warmup:
                times[name].append(ms)
    return {name: statistics.median(t) for name, t in times.items()}


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


def build_target(folder: Path, release: Path) -> Path:
    """A bare virtual environment whose torch looks like a CUDA build to inspection (never imported)."""
    from zluda_runner.core.native import compile_c

    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    torch = Path(purelib) / "torch"
    (torch / "lib").mkdir(parents=True)
    (torch / "__init__.py").write_text("raise ImportError('a stand-in torch')\n")
    (torch / "version.py").write_text("__version__ = '2.14.1+cu130'\ncuda = '13.0'\nhip = None\n")
    source = folder / "torch_cuda.c"
    source.write_text("extern int cublasCreate_v2(void *);\n"
                      "int torch_cuda_init(void) { return cublasCreate_v2(0); }\n")
    built = compile_c([source], "libtorch_cuda.so", folder / "build",
                      args=["-Wl,-soname,libtorch_cuda.so", f"-L{release}", "-l:libcublas.so.13"])
    shutil.copy2(built, torch / "lib" / "libtorch_cuda.so")
    return python


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15, help="runs per figure (default 15, at least 9)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--zluda-dir", help="release folder (default: a stand-in built here)")
    parser.add_argument("--python", help="target interpreter with a CUDA torch (default: a stand-in)")
    parser.add_argument("--smoke", action="store_true", help="a tiny size, seconds: check that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.warmup = 3, 1
    work = Path(tempfile.mkdtemp(prefix="zluda-runner-bench-"))
    env = {**os.environ, "ZLUDA_RUNNER_ROOT": str(work / "root")}  # a bare host: read nothing of this one's
    (work / "root").mkdir()
    try:
        zluda_dir = Path(args.zluda_dir) if args.zluda_dir else build_standin(work)
        python = args.python or str(build_target(work, zluda_dir))
        base = [*zluda_run_argv0(), "--cache-dir", str(work / "cache"), "--zluda-dir", str(zluda_dir)]
        launch = [*base, "--", python, *PASS]
        got = medians({
            "target": [python, *PASS],
            "launch": launch,
            "program": [*base, python, *PASS],
            "runner": [sys.executable, *PASS],
            "help": [*zluda_run_argv0(), "--help"],
            "import": [sys.executable, "-c", "import zluda_runner"],
        }, args.runs, args.warmup, env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"CPU time (user+sys), median of {args.runs} runs each, interleaved, after {args.warmup} warm-up")
    print(f"launch: {shlex.join(launch)}")
    print(f"target: {python}; runner: {sys.executable}")
    launch_added, import_added = got["launch"] - got["target"], got["import"] - got["runner"]
    print(f"floor  target -c pass:    {got['target']:7.1f} ms")
    print(f"launch (warm plan cache): {got['launch']:7.1f} ms, added {launch_added:6.1f} ms (goal <= 40 ms)")
    added = got["program"] - got["target"]
    print(f"launch without --:        {got['program']:7.1f} ms, added {added:6.1f} ms (goal <= 40 ms)")
    print(f"floor  runner -c pass:    {got['runner']:7.1f} ms")
    print(f"zluda-run --help:         {got['help']:7.1f} ms (goal <= 100 ms)")
    print(f"import zluda_runner:      {got['import']:7.1f} ms, added {import_added:6.1f} ms (goal <= 10 ms)")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set, so modules edited since their .pyc was written are "
              "compiled on every start; unset it (and run once) for the figures a user sees")


if __name__ == "__main__":
    main()
