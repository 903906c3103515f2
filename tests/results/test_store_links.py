"""A store named by a symbolic link to nothing (found 2026-12-01): on c6c0088 every reader said "cannot
make the results store LINK: unable to open database file" (a reader makes nothing) with the hint to give a
path in a folder you can write. It is "no results store at LINK (a symbolic link to TARGET, which is not
there)" now, with --json too, and nothing is made at the target."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.results.test_matrix_cli import _cli, plant


@pytest.mark.parametrize("words", [("list",), ("show", "abcd"), ("matrix",), ("delete", "abcd")])
def test_a_reader_of_a_link_to_nothing_says_where_it_points(tmp_path: Path, words: tuple[str, ...]) -> None:
    for target in (tmp_path / "gone" / "results.db", tmp_path / "results-old.db"):
        link = tmp_path / "results.db"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        code, out = _cli("--results-db", str(link), *words, "--json", tmp_path=tmp_path)
        assert code == 1, out
        error = json.loads(out)["error"]
        said = f"no results store at {link} (a symbolic link to {target}, which is not there)"
        assert error.startswith(said), error
        assert not os.path.lexists(target) and not (tmp_path / "gone").exists()


def test_a_link_to_a_store_is_read_through(tmp_path: Path) -> None:
    url = str(tmp_path / "real.db")
    plant(url, tmp_path)
    link = tmp_path / "results.db"
    link.symlink_to(url)
    code, out = _cli("--results-db", str(link), "list", "--json", tmp_path=tmp_path)
    assert code == 0 and len(json.loads(out)["runs"]) == 7, out
