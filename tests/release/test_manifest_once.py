"""The manifest is read once per command (issue 27, point 1): at 7859508 ``plan`` read it 3 times and
``releases`` twice (each of the 12 callers of ``load_current_manifest`` read the file again). The one
reader (``read_bounded`` inside ``load_manifest``) is counted; a changed file is read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.release import manifest as manifest_module


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []
    real = manifest_module.read_bounded

    def counting(path: Path, *args: object, **kwargs: object) -> bytes:
        seen.append(Path(path))
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(manifest_module, "read_bounded", counting)
    monkeypatch.setattr(manifest_module, "_READ", {})  # a fresh process
    return seen


@pytest.mark.parametrize("args", [["releases"], ["plan", "--", "sh", "-c", "true"], ["doctor"]])
def test_one_command_reads_the_manifest_once(args: list[str], reads: list[Path], tmp_path: Path) -> None:
    CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path / "cache"), *args])
    manifests = [p for p in reads if p.name == "zluda-releases.json"]
    assert manifests and len(manifests) == len(set(manifests)), manifests


def test_a_changed_manifest_is_read_again(reads: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "m.json"
    copy.write_bytes(manifest_module.default_manifest_path().read_bytes())
    first = manifest_module.load_manifest(copy)
    assert manifest_module.load_manifest(copy) is first and reads == [copy]
    os.utime(copy, ns=(1, 1))
    assert manifest_module.load_manifest(copy) is not first and reads == [copy, copy]
