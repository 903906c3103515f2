"""Fixtures for the verdict's tests: a stand-in ZLUDA release, the ELF launcher that stands in for the
target python (so `zluda-run` plans a CUDA-shaped binary and still runs this interpreter's torch), and
a fake amdgpu sysfs tree."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.telemetry.fake_sysfs import FakeCard, one_gpu_host
from zluda_runner.devtools.standin import build_release, libs_from_spec

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "workload.py"
EXAMPLES = HERE.parents[1] / "examples"


@pytest.fixture(scope="session")
def standin_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ZLUDA-like Linux release folder holding only a stand-in libcuda.so.1."""
    base = tmp_path_factory.mktemp("poc-release")
    libs = libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}})
    return build_release(libs, base / "zluda", build_dir=base / "build")


@pytest.fixture(scope="session")
def pywrap(cc_build) -> Path:  # type: ignore[no-untyped-def]
    """``pywrap ARGS`` execs ``$PYWRAP_PYTHON ARGS`` (tests/fixtures/host/pywrap.c)."""
    return cc_build(["host/pywrap.c"], "pywrap", shared=False)  # type: ignore[no-any-return]


@pytest.fixture()
def launch_env(tmp_path: Path) -> dict[str, str]:
    """This environment without loader variables, PYWRAP_PYTHON set, private caches and store."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT",
                                                            "POC_PLANT")}
    env["PYWRAP_PYTHON"] = sys.executable
    env["ZLUDA_RUNNER_CACHE"] = str(tmp_path / "zr-cache")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg-cache")
    return env


@pytest.fixture()
def gpu_root(tmp_path: Path) -> tuple[Path, FakeCard]:
    """A fake host with one idle amdgpu card (1 GiB of 16 GiB VRAM used)."""
    root = tmp_path / "root"
    return root, one_gpu_host(root, busy=0)
