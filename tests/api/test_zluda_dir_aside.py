"""A ZLUDA folder given with ``--zluda-dir`` (or ``ZLUDA_RUNNER_ZLUDA_DIR``, often set once in a shell
profile) is what every launch uses; ``fetch`` and ``releases`` do not use it, and said nothing: a user
fetched a release and believed it was what ran.  Both now say so, worded for each front end."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import zluda_runner as zr
from tests.conftest import one_asset_manifest
from zluda_runner.cli import main_group


@pytest.fixture
def mirrored(tmp_path, kit, monkeypatch):  # type: ignore[no-untyped-def]
    manifest = one_asset_manifest(tmp_path, kit.tar_gz(kit.ZLUDA_LIKE), "zluda-linux-test.tar.gz", "linux",
                                  mirror=tmp_path / "mirror")
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", (tmp_path / "mirror").as_uri())
    own = tmp_path / "my-zluda"
    own.mkdir()
    return manifest, own


def test_fetch_and_releases_say_a_launch_uses_the_given_folder(mirrored, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    manifest, own = mirrored
    base = ["--manifest", str(manifest), "--cache-dir", str(tmp_path / "cache")]
    fetched = CliRunner().invoke(main_group, [*base, "--zluda-dir", str(own), "fetch", "v6", "--os", "linux"])
    assert fetched.exit_code == 0, fetched.output
    warned = " ".join(fetched.stderr.split())  # the note names the option and the folder a launch uses
    assert "--zluda-dir" in warned and warned.count(str(own)) == 1, warned
    assert Path(fetched.stdout.strip()).is_dir()  # the fetch itself is done as before
    listed = CliRunner().invoke(main_group, [*base, "releases", "--os", "linux"],
                                env={"ZLUDA_RUNNER_ZLUDA_DIR": str(own)})
    assert listed.exit_code == 0, listed.output
    assert "--zluda-dir" in listed.output and str(own) in " ".join(listed.output.split()), listed.output
    plain = CliRunner().invoke(main_group, [*base, "fetch", "v6", "--os", "linux"])
    assert plain.exit_code == 0 and str(own) not in plain.output and "--zluda-dir" not in plain.output


def test_the_api_says_it_in_the_callers_words(mirrored, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    manifest, own = mirrored
    options = zr.Options(manifest=manifest, cache_dir=tmp_path / "cache", zluda_dir=own)
    done = zr.fetch(options, version="v6", os="linux")
    assert any(n.startswith(f"Options(zluda_dir=...) names {own}") for n in done.notes), done.notes
    listing = zr.list_releases(options, os="linux")
    assert [w for w in listing.report.warnings if w.startswith("Options(zluda_dir=...) ") and str(own) in w]
    plain = zr.fetch(zr.Options(manifest=manifest, cache_dir=tmp_path / "cache"), version="v6", os="linux")
    assert not any(str(own) in n for n in plain.notes)
