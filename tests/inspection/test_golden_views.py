"""The inspect view, whole, against its golden file (tests/golden.py), piped (no folding: its paths are
absolute, and a fold would move with their length; tests/inspection/test_inspect_fits.py checks 80
columns): the fake torch
install of the inspection tests (a cu130 build, its CUDA libraries in nvidia/, cuFFT and the driver on
LD_LIBRARY_PATH); each path under site-packages is shown as ``<sp>/...``."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.golden import assert_golden
from zluda_runner.cli import main_group


def test_inspect_view(fake_torch, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main_group, ["--cache-dir", "c", "inspect", str(fake_torch.torch_dir)],
                             env={"COLUMNS": None, "LD_LIBRARY_PATH": "extra"})
    assert out.exit_code == 0, out.output
    assert_golden("inspect", out.output, tmp=tmp_path)
