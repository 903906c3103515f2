"""Issue 29, a newcomer's second bullet: `releases` on a Linux host with HIP 5.2, where nothing fits,
printed 110-140 lines at 80 columns on 7859508 (every Windows asset too, each with its sources) and no
line saying what to do. Now: the fix first (the one nothing-fits hint, less its pointer to `releases`
itself), then one line per release built for the OS selected for, the other OSes' assets counted;
`--all` keeps every asset of every OS with its reasons and their sources. The packaged manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.golden import assert_golden
from zluda_runner.cli import main_group
from zluda_runner.release.manifest import default_manifest_path, load_current_manifest

ENV = {"COLUMNS": "80", "ZLUDA_RUNNER_MANIFEST": None, "ZLUDA_RUNNER_MIRROR": None}
WANTED = ["--os", "linux", "--hip", "5.2", "--cuda", "12"]


def _releases(cache: Path, *argv: str) -> tuple[int, str]:
    out = CliRunner().invoke(main_group, ["--cache-dir", str(cache), "releases", *argv], env=ENV)
    return out.exit_code, out.output


def test_nothing_fits_gives_the_fix_then_one_line_per_release_of_this_os(tmp_path: Path) -> None:
    manifest = load_current_manifest(None, tmp_path)
    linux = [r.id for r in manifest.releases if any(a.os == "linux" for a in r.assets)]
    windows_assets = [a.name for r in manifest.releases for a in r.assets if a.os == "windows"]
    code, text = _releases(tmp_path, *WANTED)
    assert code == 3, text
    assert not any(name in text for name in windows_assets)  # this OS only
    assert "[publisher" not in text  # no sources: they are behind --all and --json
    listed = [line.split(":", 1)[0].strip() for line in text.splitlines()
              if line.startswith("  ") and line.split(":", 1)[0].strip() in linux]
    assert listed == linux  # one line per release, in the manifest's order
    assert len(text.splitlines()) < 40  # was 110 lines


def test_the_view_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream v6 with its two assets (Linux, Windows): the fix, the Linux one in brief, the other
    counted."""
    monkeypatch.chdir(tmp_path)
    packaged = json.loads(default_manifest_path().read_text())
    v6 = next(r for r in packaged["releases"] if r["id"] == "upstream-v6")
    (tmp_path / "manifest.json").write_text(json.dumps({**packaged, "releases": [v6]}))
    code, text = _releases(tmp_path / "c", "--manifest", "manifest.json", *WANTED)
    assert code == 3, text
    assert_golden("releases-nothing-fits-two-oses", text, tmp=tmp_path)


def test_the_json_carries_the_fix_and_every_asset(tmp_path: Path) -> None:
    code, text = _releases(tmp_path, "--json", *WANTED)
    doc = json.loads(text)
    assert code == 3 and doc["selected"] is None
    assert doc["fix"] and isinstance(doc["fix"], list)
    assert not any("`zluda-run releases`" in line for line in doc["fix"])  # no pointer to itself
    assert {r["asset_name"] for r in doc["rejected"]} == {
        a.name for r in load_current_manifest(None, tmp_path).releases for a in r.assets}


def test_all_keeps_every_asset_with_its_sources(tmp_path: Path) -> None:
    code, text = _releases(tmp_path, "--all", *WANTED)
    assert code == 3, text
    manifest = load_current_manifest(None, tmp_path)
    for release in manifest.releases:
        for asset in release.assets:
            assert f"{release.id}/{asset.name}" in text.replace("\n    ", " ").replace("\n  ", " ")
    assert "[publisher" in text
