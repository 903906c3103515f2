"""Builds for the probe/trace tests: stand-in drivers and C clients from tests/fixtures/probe."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def standin(cc_build) -> Path:
    """Stand-in libcuda with the planted gaps."""
    return cc_build(["probe/standin_cuda.c"], "libcuda.so.1", args=["-Wl,-soname,libcuda.so.1"])


@pytest.fixture(scope="session")
def standin_ok(cc_build) -> Path:
    """Stand-in libcuda without gaps (the 'real driver' under the tracer)."""
    return cc_build(
        ["probe/standin_cuda.c"], "libcuda.so.1", args=["-DSTANDIN_NO_GAPS", "-Wl,-soname,libcuda.so.1"]
    )


@pytest.fixture(scope="session")
def trace_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trace-cache")
