"""Fixtures for find's tests: stand-in ZLUDA releases built here, each a driver that works, aborts when
loaded, computes wrong, works only with cuDNN off, only with pinned memory off, presses Ctrl-C (the
workload sends SIGINT to whoever started it), whose plan is FATAL (it needs a libamdhip64.so this host's
fake tree lacks), or that computes right only on the HIP whose ``hipInit`` succeeds (it needs
libamdhip64.so: a fake tree's ROCm folders hold one each, :func:`rocm_tree`); the ELF launcher as the
target; an empty fake host tree (no GPU telemetry)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from zluda_runner.core.fsutil import atomic_copy
from zluda_runner.core.native import compile_c
from zluda_runner.devtools.standin import build_release, libs_from_spec
from zluda_runner.devtools.stubs import c_source

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "workload.py"
KINDS = ("ok", "abort", "wrong", "cudnn", "fatal", "interrupt", "pinned", "hip")
_HIP_C = "int hipInit(unsigned flags) { (void)flags; return HIP_INIT; }\n"
_ABORT = "\n#include <stdlib.h>\n__attribute__((constructor)) static void zr_abort(void) { abort(); }\n"


def build_standin(base: Path, kind: str) -> Path:
    """A stand-in release folder ``base/kind`` whose libcuda.so.1 behaves as ``kind`` says."""
    libs = libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}})
    release = build_release(libs, base / kind, build_dir=base / "build")
    source = c_source(libs[0])
    version = {"wrong": 13001, "cudnn": 13002, "interrupt": 13003, "pinned": 13004}.get(kind, 13000)
    source = source.replace("*version = 13000", f"*version = {version}") + (_ABORT if kind == "abort" else "")
    if kind == "hip":  # wrong (13001) unless the HIP it loads initialises
        source = "int hipInit(unsigned flags);\n" + source.replace("*version = 13000",
                                                                   "*version = 13000 + (hipInit(0) != 0)")
    c_file = base / f"{kind}.c"
    c_file.write_text(source, encoding="ascii")
    args = ["-w", "-Wl,-soname,libcuda.so.1"]
    if kind in ("fatal", "hip"):  # linked against a HIP that the host (the fake tree) may not have
        hip = build_hip(base, 0)
        args += [f"-L{hip.parent}", "-Wl,--no-as-needed", "-lamdhip64"]
    built = compile_c([c_file], "libcuda.so.1", base / f"out-{kind}", args=args)
    atomic_copy(built, release / "libcuda.so.1", durable=False)
    return release


def build_hip(base: Path, answer: int) -> Path:
    """A ``libamdhip64.so`` whose ``hipInit`` returns ``answer`` (0: this HIP runs the GPU)."""
    base.mkdir(parents=True, exist_ok=True)
    hip_c = base / f"hip{answer}.c"
    hip_c.write_text(_HIP_C.replace("HIP_INIT", str(answer)), encoding="ascii")
    return compile_c([hip_c], "libamdhip64.so", base / f"hip{answer}", args=["-Wl,-soname,libamdhip64.so"])


def rocm_tree(root: Path, base: Path, installs: dict[str, int]) -> Path:
    """A fake host tree with AMD ROCm folders ``/opt/rocm-X.Y.Z`` (version -> what their HIP's ``hipInit``
    returns): each with its package number, HIP's own header and its ``lib/libamdhip64.so``."""
    for version, answer in installs.items():
        folder = root / "opt" / f"rocm-{version}"
        (folder / ".info").mkdir(parents=True)
        (folder / ".info" / "version").write_text(f"{version}-1\n")
        major, minor = version.split(".")[:2]
        (folder / "include" / "hip").mkdir(parents=True)
        (folder / "include" / "hip" / "hip_version.h").write_text(
            f"#define HIP_VERSION_MAJOR {major}\n#define HIP_VERSION_MINOR {minor}\n")
        (folder / "lib").mkdir()
        atomic_copy(build_hip(base, answer), folder / "lib" / "libamdhip64.so", durable=False)
    return root


@pytest.fixture(scope="session")
def standins(tmp_path_factory: pytest.TempPathFactory, native_dir: Path) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("find-standins")
    return {kind: build_standin(base, kind) for kind in KINDS}


@pytest.fixture(scope="session")
def pywrap(cc_build) -> Path:  # type: ignore[no-untyped-def]
    """``pywrap ARGS`` execs ``$PYWRAP_PYTHON ARGS`` (tests/fixtures/host/pywrap.c)."""
    return cc_build(["host/pywrap.c"], "pywrap", shared=False)  # type: ignore[no-any-return]


@pytest.fixture()
def find_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This environment without loader variables; PYWRAP_PYTHON, private caches, an empty fake host tree
    (no GPU, no HIP: nothing read from this machine), set here and returned for subprocesses."""
    root = tmp_path / "root"
    root.mkdir()
    for name in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT", "ZLUDA_RUNNER_TORCH_DEFAULTS",
                 "ZLUDA_RUNNER_DEFAULTS_OFF"):
        monkeypatch.delenv(name, raising=False)
    values = {"PYWRAP_PYTHON": sys.executable, "ZLUDA_RUNNER_CACHE": str(tmp_path / "zr-cache"),
              "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), "ZLUDA_RUNNER_ROOT": str(root)}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return dict(os.environ)
