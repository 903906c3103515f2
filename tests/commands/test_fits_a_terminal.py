"""Views fit the terminal (issue 20, newcomer item 7): at COLUMNS=80 and 120 no line is wider than
the terminal (a single word wider than it, a citation `repo:path@sha`, is broken at its `:`, `/`, `@`)
and every release id and asset name is whole on one line; piped without COLUMNS, a row stays one
line (for grep)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.release.manifest import load_current_manifest


def assert_fits(text: str, width: int, names: list[str]) -> None:
    lines = text.splitlines()
    wide = [line for line in lines if len(line) > width]
    assert not wide, f"wider than {width} columns:\n" + "\n".join(wide) + "\n---\n" + text
    for name in names:
        whole = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])")
        assert any(whole.search(line) for line in lines), f"{name} is not whole on one line:\n{text}"


def _manifest_names(cache: Path) -> tuple[list[str], list[str]]:
    manifest = load_current_manifest(None, cache)
    return [r.id for r in manifest.releases], [a.name for r in manifest.releases for a in r.assets]


@pytest.mark.parametrize("width", [80, 120])
def test_releases_all_fits(tmp_path: Path, width: int) -> None:
    ids, assets = _manifest_names(tmp_path)
    out = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path), "releases", "--all"],
                             env={"COLUMNS": str(width)})
    assert out.exit_code == 0, out.output
    assert_fits(out.output, width, ids + assets)


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("wanted", [["--os", "linux", "--hip", "6.2", "--cuda", "12"],
                                    ["--os", "windows", "--hip", "6.4", "--cuda", "11"],
                                    ["--os", "linux", "--hip", "5.2", "--cuda", "12"]])
def test_a_selection_fits(tmp_path: Path, width: int, wanted: list[str]) -> None:
    ids, assets = _manifest_names(tmp_path)
    out = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path), "releases", *wanted],
                             env={"COLUMNS": str(width)})
    assert out.exit_code in (0, 3), out.output
    assert_fits(out.output, width, [n for n in ids + assets if n in out.output])


def test_piped_rows_stay_one_line(tmp_path: Path) -> None:
    ids, assets = _manifest_names(tmp_path)
    out = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path), "releases", "--all"],
                             env={"COLUMNS": None})
    assert out.exit_code == 0, out.output
    rows = [line for line in out.output.splitlines() if line.split()[:1] and line.split()[0] in ids]
    assert len(rows) == len(assets)  # one line per asset, every column on it
    assert all(len(row.split()) >= 8 for row in rows)
