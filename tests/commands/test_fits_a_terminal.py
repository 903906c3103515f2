"""Views fit the terminal (issue 20, newcomer item 7): at COLUMNS=80 and 120 no line is wider than
the terminal (a single word wider than it, a citation `repo:path@sha`, is broken at its `:`, `/`, `@`)
and every release id and asset name is whole on one line; piped without COLUMNS, a row stays one
line (for grep)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.core.test_textio import HOSTILE, RAW, _main
from tests.doctor.test_doctor import _write, rocm62_tree
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


def _commands(group: click.Group, path: list[str]) -> list[list[str]]:
    """Every command path under ``group``: its table (``list_commands``), each loaded (``get_command``),
    not only those some earlier test happened to load (``group.commands``: on 7859508 the walk, run alone,
    saw only the top level)."""
    out = [path]
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        out += _commands(command, [*path, name]) if isinstance(command, click.Group) else [[*path, name]]
    return out


def test_the_help_walk_reaches_every_command() -> None:
    walked = {" ".join(p) for p in _commands(main_group, [])}
    assert {"poc", "run", "releases", "trace-report", "results matrix", "manifest update"} <= walked


def _shown_fits(text: str) -> None:
    assert not RAW.search(text), text  # every control char outside data brought was made visible
    wide = [line for line in text.splitlines() if len(line) > 80]
    assert not wide, "\n".join(wide)


def test_every_help_and_view_fits_80_columns_and_shows_hostile_data_escaped(tmp_path: Path) -> None:
    """Through zluda_runner.cli.main (its streams the sink): every --help, and views fed outside data
    with ESC, OSC, BEL, C1, bidi and NUL in it; on d816f30 `releases --os windows` and `poc --help`
    had lines of 87-109 columns."""
    env = {"COLUMNS": "80"}
    for path in _commands(main_group, []):
        code, text = _main([*path, "--help"], env)
        assert code == 0, (path, text)
        _shown_fits(text)
    cache = tmp_path / ("cache-" + HOSTILE.replace("\x00", "").replace("/", "") + "-a-long-folder-name")
    cache.mkdir()
    rocm62_tree(tmp_path / "root", gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    _write(tmp_path / "root", "sys/class/kfd/kfd/topology/nodes/1/name", HOSTILE + "\n")
    (tmp_path / "p_1").mkdir()
    (tmp_path / "p_1" / "log.txt").write_text("cuInit(flags: 0) -> CUDA_SUCCESS\ncuCtxSynchronize() -> 801\n")
    code, text = _main(["--json", "trace-report", str(tmp_path)], env)
    trace = tmp_path / "trace.json"
    trace.write_text(text.replace("cuCtxSynchronize", json.dumps(HOSTILE)[1:-1] + "cuCtx" * 12))
    for argv in (["releases", "--all"], ["releases", "--os", "windows"], ["cache", "list"],
                 ["doctor", "--root", str(tmp_path / "root")], ["trace-report", str(trace)],
                 ["--zluda-dir", str(cache), "plan", "--", "true"], ["status", "--torch-lib", str(cache)]):
        code, text = _main(["--cache-dir", str(cache), *argv], env)
        assert code in (0, 1, 2, 3), (argv, text)
        _shown_fits(text)
        assert "\\x1b" in text or argv[0] == "releases", (argv, text)  # the hostile data was shown
