"""The plan view, whole, against its golden file (tests/golden.py), piped (no folding: its paths are
absolute, and a fold would move with their length; tests/plan/test_plan_fits.py checks 80
columns): the test app linked to
the "real" cuBLAS by DT_RPATH, planned against a stand-in release whose cuBLAS lacks a symbol the app
needs (a warning, not fatal)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.golden import assert_golden
from zluda_runner.cli import main_group


def test_plan_view(apps, standin_releases, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    release = standin_releases["missing_symbol"]
    argv = ["--cache-dir", "c", "--zluda-dir", str(release), "plan", "--", str(apps["rpath"]), "sgemm"]
    env = {"COLUMNS": None, "LD_LIBRARY_PATH": None, "LD_PRELOAD": None, "LD_AUDIT": None}
    out = CliRunner().invoke(main_group, argv, env=env)
    assert out.exit_code == 0, out.output
    assert_golden("plan", out.output, tmp=tmp_path, release=release, app=apps["rpath"].parent)
