"""The doctor's view, whole, against its golden files (tests/golden.py), at 80 columns: a ROCm 6.2 root
tree with one RX 7900 (gfx1100), and an empty root (failed checks, each with its fix); the manifest is
fixed (the packaged upstream v6, one asset), and so is the kernel's release (the one thing the doctor
reads from the running host)."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import one_asset_manifest
from tests.doctor.test_doctor import rocm62_tree
from tests.golden import assert_golden
from zluda_runner.cli import main_group


@pytest.mark.parametrize(("name", "code"), [("doctor-rocm62", 0), ("doctor-empty-root", 3)])
def test_doctor_view(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, code: int) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(platform, "release", lambda: "6.8.0-golden")
    (tmp_path / "root").mkdir()
    if name == "doctor-rocm62":
        rocm62_tree(tmp_path / "root", gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    one_asset_manifest(tmp_path, b"golden payload", "zluda-linux-golden.tar.gz", "linux")
    argv = ["--manifest", "manifest.json", "--cache-dir", "c", "doctor", "--root", "root"]
    out = CliRunner().invoke(main_group, argv, env={"COLUMNS": "80", "ZLUDA_RUNNER_MANIFEST": None})
    assert out.exit_code == code, out.output
    assert_golden(name, out.output, tmp=tmp_path)
