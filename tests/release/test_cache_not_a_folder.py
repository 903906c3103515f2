"""A cache folder that is a file (or under one, or a link to nothing): one clear CacheError from every
command and call that uses the cache, naming that path; never the trust file's or a lock's fault."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import one_asset_manifest
from zluda_runner.cli import main_group
from zluda_runner.core.errors import CacheError
from zluda_runner.core.fsutil import file_kind
from zluda_runner.release import cache as cache_mod
from zluda_runner.release.store import CacheLayout, TrustStore


@pytest.fixture
def setup(tmp_path, kit, monkeypatch):
    manifest = one_asset_manifest(tmp_path, kit.tar_gz(kit.ZLUDA_LIKE), "zluda-linux-test.tar.gz", "linux",
                                  mirror=tmp_path / "mirror")
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", (tmp_path / "mirror").as_uri())

    def run(cache: Path, *args: str):
        return CliRunner().invoke(main_group, ["--manifest", str(manifest), "--cache-dir", str(cache), *args],
                                  catch_exceptions=False)

    return run, tmp_path


COMMANDS = [("fetch", "v6", "--os", "linux"), ("cache", "list"), ("cache", "clean"),
            ("cache", "clean", "v6"), ("cache", "path", "v6"), ("cache", "path")]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_cache_that_is_a_file_is_named_by_every_command(setup, args):
    run, tmp_path = setup
    cache = tmp_path / "cache"
    cache.write_bytes(b"not a folder")
    res = run(cache, *args)
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    assert "trust" not in res.stderr and "lock" not in res.stderr  # no file inside it named
    assert "--cache-dir" in res.stderr and f"move {cache} away" in res.stderr
    assert cache.read_bytes() == b"not a folder"  # left as it was
    res = run(cache, "--json", *args)
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert data["kind"] == "cache" and str(cache) in data["error"] and "--cache-dir" in data["hint"]
    assert f"{cache}{os.sep}" not in data["error"]  # the cache named, not a file inside it


def test_a_cache_under_a_file_names_the_file(setup):
    run, tmp_path = setup
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    res = run(blocker / "cache", "fetch", "v6", "--os", "linux")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert str(blocker / "cache") in res.stderr and f"{blocker} is a file" in res.stderr
    assert f"move {blocker} away" in res.stderr


@pytest.mark.skipif(os.name == "nt", reason="symbolic links need privileges on Windows")
def test_a_cache_that_is_a_dangling_link_is_named(setup):
    run, tmp_path = setup
    cache = tmp_path / "cache"
    cache.symlink_to(tmp_path / "gone")
    res = run(cache, "--json", "cache", "list")
    data = json.loads(res.stdout)
    assert res.exit_code == 1 and data["kind"] == "cache" and str(cache) in data["error"], res.output


def test_a_missing_cache_folder_is_fine_and_a_fetch_creates_it(setup):
    run, tmp_path = setup
    cache = tmp_path / "new" / "cache"
    assert run(cache, "cache", "list").exit_code == 0
    assert not cache.exists()  # a reader creates nothing
    assert run(cache, "fetch", "v6", "--os", "linux").exit_code == 0
    assert cache.is_dir()


def test_the_library_calls_say_it_too(tmp_path):
    cache = tmp_path / "cache"
    cache.write_text("x")
    calls = [lambda: cache_mod.list_cache(cache), lambda: cache_mod.list_partial_downloads(cache),
             lambda: cache_mod.cache_contents(cache), lambda: cache_mod.clean_cache(cache),
             lambda: cache_mod.verify_cache(cache), lambda: TrustStore(CacheLayout(cache)).entries()]
    for call in calls:
        with pytest.raises(CacheError, match="is a file, not a folder"):
            call()


@pytest.mark.parametrize("area", ["downloads", "releases", "tmp", "locks"])
def test_a_cache_area_that_is_a_file_is_named(setup, area):
    run, tmp_path = setup
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / area).write_text("x")
    for args in COMMANDS[:4]:
        res = run(cache, *args)
        if args == ("cache", "list") and area in ("tmp", "locks"):  # a reader does not need them
            listed = json.loads(run(cache, "--json", "cache", "list").stdout)
            assert res.exit_code == 0 and (listed["releases"], listed["partial"]) == ([], []), res.output
            continue
        assert res.exit_code == 1 and "Traceback" not in res.output, res.output
        assert f"its {area} folder, {cache / area}, is a file, not a folder" in res.stderr
    assert sorted(p.name for p in cache.iterdir()) == [area]  # nothing made beside it


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_cache_that_is_a_fifo_is_named_by_what_it_is(tmp_path):
    """The cache's own name for a file's type was "not a folder" for all but a regular file (the
    message read "... is not a folder, not a folder"): it is core/fsutil's ``file_kind`` now, as for
    every other file refused by its type."""
    cache = tmp_path / "cache"
    os.mkfifo(cache)
    with pytest.raises(CacheError) as caught:
        cache_mod.list_cache(cache)
    assert f"{cache} is {file_kind(stat.S_IFIFO)}," in caught.value.message
    assert stat.S_ISFIFO(os.lstat(cache).st_mode)  # left as it was, never opened
