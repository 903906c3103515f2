"""The release views, whole, against their golden files (tests/golden.py): `releases` selecting, finding
nothing and listing all, and `cache list`, from a fixed manifest (the packaged upstream v6, one asset), at
80 columns, its files named relative to the test's folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import one_asset_manifest
from tests.golden import assert_golden
from zluda_runner.cli import main_group

ENV = {"COLUMNS": "80", "ZLUDA_RUNNER_MANIFEST": None, "ZLUDA_RUNNER_MIRROR": None}
BASE = ["--manifest", "manifest.json", "--cache-dir", "c"]


@pytest.mark.parametrize(("name", "argv", "code"), [
    ("releases-selected", ["releases", "--os", "linux", "--hip", "6.2", "--cuda", "12"], 0),
    ("releases-nothing-fits", ["releases", "--os", "linux", "--hip", "5.2", "--cuda", "12"], 3),
    ("releases-all", ["releases", "--all"], 0),
])
def test_release_views(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, argv: list[str],
                       code: int) -> None:
    monkeypatch.chdir(tmp_path)
    one_asset_manifest(tmp_path, b"golden payload", "zluda-linux-golden.tar.gz", "linux")
    out = CliRunner().invoke(main_group, [*BASE, *argv], env=ENV)
    assert out.exit_code == code, out.output
    assert_golden(name, out.output, tmp=tmp_path)


def test_cache_list_view(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kit) -> None:
    monkeypatch.chdir(tmp_path)
    one_asset_manifest(tmp_path, kit.tar_gz(kit.ZLUDA_LIKE), "zluda-linux-golden.tar.gz", "linux",
                       mirror=tmp_path / "mirror")
    env = {**ENV, "ZLUDA_RUNNER_MIRROR": (tmp_path / "mirror").as_uri()}
    fetched = CliRunner().invoke(main_group, [*BASE, "fetch", "upstream-v6", "--os", "linux"], env=env)
    assert fetched.exit_code == 0, fetched.output
    out = CliRunner().invoke(main_group, [*BASE, "cache", "list"], env=env)
    assert out.exit_code == 0, out.output
    assert_golden("cache-list", out.output, tmp=tmp_path)
