"""core/paths.real_path: the one way a path of the target is made canonical, never an OSError. Under Wine,
``os.path.realpath`` of a path over 260 characters raises ``[WinError 234]`` (measured on the real Windows
CPython: tests/windows/test_wine_place_paths.py); zluda-run then died at import (3abffb6). Here that
failure is given to it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zluda_runner.core import paths
from zluda_runner.core.paths import real_path


def test_links_are_resolved(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert real_path(tmp_path / "link" / "x") == os.path.realpath(tmp_path / "real" / "x")


def test_where_realpath_fails_the_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def more_data(path: object, **_kw: object) -> str:
        raise OSError(22, "More data available", str(path), 234)

    monkeypatch.setattr(paths.os.path, "realpath", more_data)
    monkeypatch.chdir(tmp_path)
    assert real_path(Path("a") / ".." / "b") == str(tmp_path / "b")
