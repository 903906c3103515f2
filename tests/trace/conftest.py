"""Builds for the probe/trace tests: stand-in drivers and C clients from tests/fixtures/probe."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def trace_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trace-cache")
