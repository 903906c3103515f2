"""Fixtures for find's tests: stand-in ZLUDA releases built here, each a driver that works, aborts when
loaded, computes wrong, works only with cuDNN off, presses Ctrl-C (the workload sends SIGINT to whoever
started it), or whose plan is FATAL (it needs a libamdhip64.so this host's fake tree lacks); the ELF
launcher as the target; an empty fake host tree (no GPU telemetry)."""

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
KINDS = ("ok", "abort", "wrong", "cudnn", "fatal", "interrupt")
_ABORT = "\n#include <stdlib.h>\n__attribute__((constructor)) static void zr_abort(void) { abort(); }\n"


def build_standin(base: Path, kind: str) -> Path:
    """A stand-in release folder ``base/kind`` whose libcuda.so.1 behaves as ``kind`` says."""
    libs = libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}})
    release = build_release(libs, base / kind, build_dir=base / "build")
    source = c_source(libs[0])
    version = {"wrong": 13001, "cudnn": 13002, "interrupt": 13003}.get(kind, 13000)
    source = source.replace("*version = 13000", f"*version = {version}") + (_ABORT if kind == "abort" else "")
    c_file = base / f"{kind}.c"
    c_file.write_text(source, encoding="ascii")
    args = ["-w", "-Wl,-soname,libcuda.so.1"]
    if kind == "fatal":  # linked against a HIP that the host (the fake tree) does not have
        hip_c = base / "hip.c"
        hip_c.write_text("int hipInit(unsigned flags) { (void)flags; return 0; }\n", encoding="ascii")
        hip = compile_c([hip_c], "libamdhip64.so", base / "hip", args=["-Wl,-soname,libamdhip64.so"])
        args += [f"-L{hip.parent}", "-Wl,--no-as-needed", "-lamdhip64"]
    built = compile_c([c_file], "libcuda.so.1", base / f"out-{kind}", args=args)
    atomic_copy(built, release / "libcuda.so.1", durable=False)
    return release


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
