"""A stand-in ZLUDA release for running workloads through the real `zluda-run --monitor`."""

from __future__ import annotations

from pathlib import Path

import pytest

from zluda_runner.devtools.standin import build_release, libs_from_spec


@pytest.fixture(scope="session")
def standin_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ZLUDA-like Linux release folder holding only a stand-in libcuda.so.1."""
    base = tmp_path_factory.mktemp("telemetry-release")
    libs = libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}})
    return build_release(libs, base / "zluda", build_dir=base / "build")


@pytest.fixture(scope="session")
def pywrap(cc_build) -> Path:  # type: ignore[no-untyped-def]
    """``pywrap ARGS`` execs ``$PYWRAP_PYTHON ARGS``: a Python workload the planner sees as a plain
    ELF program, so the test interpreter's CPU-only torch is not judged (tests/fixtures/host/pywrap.c)."""
    return cc_build(["host/pywrap.c"], "pywrap", shared=False)  # type: ignore[no-any-return]
