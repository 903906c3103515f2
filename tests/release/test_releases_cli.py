"""`zluda-run releases` through click's runner: table, selection text and --json."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from zluda_runner.cli import main_group


def test_listing_shows_every_release() -> None:
    result = CliRunner().invoke(main_group, ["releases", "--all"])
    assert result.exit_code == 0, result.output
    for rid in ("upstream-v6", "upstream-v3", "fork-3.9.5", "fork-3.9.6", "fork-rel.11cc584"):
        assert rid in result.output
    assert "ZLUDA-nightly-windows-rocm6-amd64.zip" in result.output


def test_selection_text_explains_the_others() -> None:
    argv = ["releases", "--os", "windows", "--hip", "6.2", "--cuda", "11"]
    result = CliRunner().invoke(main_group, argv, env={"COLUMNS": None})  # piped: a line per asset
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].startswith("selected: fork-3.9.5 ")
    assert lines[2] == "  asset:  ZLUDA-windows-rocm6-amd64.zip"
    # every other asset of this OS under "not selected for windows", each with the reasons the record
    # gives; the other OS's are counted in the heading (issue 29: this host's OS only unless --all)
    start = next(i for i, line in enumerate(lines) if line.startswith("not selected for windows"))
    hidden = re.search(r"\((\d+) asset\(s\) for another OS not shown", lines[start])
    shown = dict(line[2:].split(": ", 1) for line in lines[start + 1:]
                 if line.startswith("  "))  # then the manifest's own line
    rejected = json.loads(CliRunner().invoke(main_group, [*argv, "--json"]).output)["rejected"]
    expected = {f"{r['release_id']}/{r['asset_name']}": "; ".join(r["reasons"]) for r in rejected}
    assert all(expected[key] == reasons for key, reasons in shown.items())
    assert hidden is not None and len(shown) + int(hidden.group(1)) == len(expected)
    rocm5 = [r for r in rejected if r["release_id"] == "fork-3.9.5" and "rocm5" in r["asset_name"]]
    assert [(r["blocked_by"], r["needs"]) for r in rocm5] == [("hip", "HIP SDK 5.7")]  # what it needs


def test_acceptance_json_selects_fork_rocm6() -> None:
    result = CliRunner().invoke(
        main_group, ["releases", "--os", "windows", "--hip", "6.2", "--cuda", "11", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["schema"] == 1
    assert data["selected"]["release"].startswith("fork-")
    assert "rocm6" in data["selected"]["asset"]["name"]
    assert data["rejected"] and all(r["reasons"] for r in data["rejected"])
    assert len(data["releases"]) >= 8


def test_global_json_flag_and_manifest_option(tmp_path: Path) -> None:
    result = CliRunner().invoke(main_group, ["--json", "releases", "--all"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["selected"] is None and data["rejected"] == [] and data["releases"]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = CliRunner().invoke(main_group, ["--json", "--manifest", str(bad), "releases"])
    error = json.loads(result.output)
    assert result.exit_code == 1 and error["kind"] == "manifest" and str(bad) in error["error"], result.output
    assert "line 1, column 2" in error["error"]  # where the JSON broke


def test_manifest_from_environment_and_unknown_release(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.json"
    env = {"ZLUDA_RUNNER_MANIFEST": str(missing)}
    result = CliRunner().invoke(main_group, ["--json", "releases"], env=env)
    error = json.loads(result.output)
    assert result.exit_code == 1 and error["kind"] == "manifest", result.output
    assert str(missing) in error["error"], result.output
    result = CliRunner().invoke(main_group, ["--release", "fork-3.9.9", "releases", "--os", "windows"])
    assert result.exit_code != 0 and "fork-3.9.6" in result.output
