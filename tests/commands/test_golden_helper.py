"""tests/golden.py compares a view's whole text, fails with a diff, rewrites only when asked, and
replaces what depends on the host (the test's folder, the repository, the interpreter, the version,
a timestamp)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests import golden
from zluda_runner import __version__


def test_host_dependent_text_is_replaced(tmp_path: Path) -> None:
    text = (f"cache {tmp_path}/c, from {golden.REPO}/manifests, by {sys.executable}, zluda-run "
            f"{__version__}, fetched 2026-12-03T06:15:00Z")
    assert golden.normalised(text, tmp=tmp_path) == ("cache <tmp>/c, from <repo>/manifests, by <python>, "
                                                     "zluda-run <version>, fetched <time>")


def test_a_difference_fails_and_update_rewrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(golden, "GOLDEN", tmp_path)
    monkeypatch.delenv(golden.UPDATE, raising=False)
    with pytest.raises(AssertionError, match="no golden file"):
        golden.assert_golden("view", "one\n")
    (tmp_path / "view.txt").write_text("one\n")
    golden.assert_golden("view", "one\n")
    with pytest.raises(AssertionError) as failed:
        golden.assert_golden("view", "two\n")
    assert "-one\n+two" in str(failed.value)
    assert (tmp_path / "view.txt").read_text() == "one\n"  # a failed comparison writes nothing
    monkeypatch.setenv(golden.UPDATE, "1")
    golden.assert_golden("view", f"two {tmp_path}\n", tmp=tmp_path)
    assert (tmp_path / "view.txt").read_text() == "two <tmp>\n"
