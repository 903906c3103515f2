"""CI: the platform wheel runs the real v6-shaped launch on a machine without a C compiler (issue 29).

usage: python tools/wheel_launch.py WHEEL WORK

Builds (here, with the compiler) the world of tests/launch/test_real_shape.py: NVIDIA-named stand-ins
laid out like PyPI torch's nvidia/cu13/lib, a torch-like target started through a shell script, a fake
host tree whose /opt/rocm/lib holds a HIP stub, and a release of the upstream v6 shape without SONAMEs
and without zluda_ld (so the launch needs our LD_AUDIT redirector). Then installs WHEEL into a fresh
venv and runs ``zluda-run --zluda-dir RELEASE -- SCRIPT`` there with PATH holding only the venv's bin
(no cc, no CC): it must exit 0, every math call must be served by the release's shims, and the
redirector must be the wheel's own build (nothing compiled into the cache). Exit 1 naming what failed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from zluda_runner.core.native import PREBUILT_CHECKED, compile_c  # noqa: E402 - the checkout is on sys.path

SRC = REPO / "tests" / "fixtures" / "launch" / "realshape"
SHIMS = {"libcublas.so": ("CUBLAS", ["libcublas.so.13"]),
         "libcublaslt.so": ("CUBLASLT", ["libcublasLt.so.13"]),
         "libcusparse.so": ("CUSPARSE", ["libcusparse.so.12"]),
         "libnvcuda.so": ("CUDA", ["libcuda.so.1", "libcuda.so"])}


def build_world(base: Path) -> tuple[Path, Path, Path]:
    """(the release, the launch script, the fake host root), built with this machine's compiler."""
    out = base / "build"
    target, nv, rocm = base / "target", base / "target/nvidia/cu13/lib", base / "root/opt/rocm/lib"
    for d in (nv, rocm):
        d.mkdir(parents=True)
    shutil.copy2(compile_c([SRC / "hipstub.c"], "libamdhip64.so", out), rocm / "libamdhip64.so")
    for name, macro, extra in (("libcublasLt.so.13", "CUBLASLT", []), ("libcusparse.so.12", "CUSPARSE", []),
                               ("libcublas.so.13", "CUBLAS", ["-DNVIDIA_CUBLAS_NEEDS_LT",
                                                              "-l:libcublasLt.so.13"]),
                               ("libcusolver.so.12", "CUSOLVER", ["-l:libcublas.so.13",
                                                                  "-l:libcublasLt.so.13",
                                                                  "-l:libcusparse.so.12"])):
        script = base / f"{name}.map"
        script.write_text(f"{name} {{ global: *; }};\n")
        built = compile_c([SRC / "lib.c"], name, out, deps=[script], args=[
            f"-D{macro}", f'-DWHO="nvidia {name}"', f"-Wl,-soname,{name}", f"-Wl,--version-script={script}",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN", f"-L{nv}", *extra, "-ldl"])
        shutil.copy2(built, nv / name)
    shutil.copy2(compile_c([SRC / "torch_cuda.c"], "libtorch_cuda.so", out, args=[
        "-Wl,--disable-new-dtags,-rpath,$ORIGIN/nvidia/cu13/lib", f"-L{nv}", "-l:libcublas.so.13",
        "-l:libcublasLt.so.13", "-l:libcusparse.so.12", "-ldl"]), target / "libtorch_cuda.so")
    pyish = compile_c([SRC / "pyish.c"], "pyish", out, shared=False, args=["-ldl"])
    launcher = base / "run.sh"
    launcher.write_text(f'#!/bin/sh\nexec {pyish} {target} "$@"\n')
    launcher.chmod(0o755)
    release = base / "zluda"
    release.mkdir()
    for file_name, (macro, links) in SHIMS.items():
        shutil.copy2(compile_c([SRC / "lib.c"], file_name, out, args=[
            f"-D{macro}", "-DUSE_HIP", f'-DWHO="zluda {file_name}"', "-Wl,--no-as-needed", f"-L{rocm}",
            "-l:libamdhip64.so", "-ldl"]), release / file_name)
        for link in links:
            os.symlink(file_name, release / link)
    return release, launcher, base / "root"


def fail(what: str, proc: subprocess.CompletedProcess[str] | None = None) -> int:
    print(f"wheel launch check FAILED: {what}", file=sys.stderr)
    if proc is not None:
        print(f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    wheel, work = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    if "-none-manylinux" not in wheel.name:
        return fail(f"{wheel.name} is not a manylinux platform wheel")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    release, launcher, root = build_world(work)
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bin_dir = env_dir / "bin"
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   timeout=900)
    (work / "home").mkdir()
    env = {"PATH": str(bin_dir), "HOME": str(work / "home"), "ZLUDA_RUNNER_ROOT": str(root),
           "LANG": "C.UTF-8"}
    if any(shutil.which(cc, path=env["PATH"]) for cc in ("cc", "gcc", "clang")):
        return fail(f"a C compiler is on the check's PATH ({env['PATH']})")
    cache = work / "cache"
    proc = subprocess.run([str(bin_dir / "zluda-run"), "--cache-dir", str(cache), "--zluda-dir", str(release),
                           "--", str(launcher)], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    if proc.returncode != 0 or not proc.stdout.rstrip().endswith("OK"):
        return fail(f"the launch exited {proc.returncode}", proc)
    if "served by zluda libcublas.so" not in proc.stdout or "served by nvidia libcublas.so.13" in proc.stdout:
        return fail("the release's cuBLAS did not serve the calls", proc)
    compiled = sorted(p for p in (cache / "native").rglob("*.so*")
                      if p.is_file() and PREBUILT_CHECKED not in p.relative_to(cache / "native").parts)
    checked = list((cache / "native" / PREBUILT_CHECKED).iterdir()) if (cache / "native").is_dir() else []
    if compiled or not checked:
        return fail(f"the wheel's redirector was not used (compiled into the cache: {compiled})", proc)
    print(f"wheel launch check: ok ({wheel.name}; no compiler on PATH; the wheel's redirector served)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
