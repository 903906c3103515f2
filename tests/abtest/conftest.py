"""Fixtures for running workloads through the real `zluda-run run`: a stand-in ZLUDA release and
an ELF launcher that stands in for the target python."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from zluda_runner.devtools.standin import build_release, libs_from_spec


@pytest.fixture(scope="session")
def standin_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ZLUDA-like Linux release folder holding only a stand-in libcuda.so.1."""
    base = tmp_path_factory.mktemp("host-release")
    libs = libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}})
    return build_release(libs, base / "zluda", build_dir=base / "build")


@pytest.fixture(scope="session")
def pywrap(cc_build) -> Path:
    """``pywrap ARGS`` execs ``$PYWRAP_PYTHON ARGS`` (see tests/fixtures/host/pywrap.c)."""
    return cc_build(["host/pywrap.c"], "pywrap", shared=False)


@pytest.fixture()
def launch_env(tmp_path: Path) -> dict[str, str]:
    """This environment without loader variables, with PYWRAP_PYTHON set and private caches."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")}
    env["PYWRAP_PYTHON"] = sys.executable
    env["ZLUDA_RUNNER_CACHE"] = str(tmp_path / "zr-cache")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg-cache")  # ZLUDA's compile cache is looked at here
    return env
