"""Partial downloads are told truly: a fetch that got nothing keeps nothing and says so; one that got
part of the file keeps it, and ``cache list`` shows it (bytes so far of the total, resumed next time)."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from tests.golden import assert_golden
from zluda_runner.cli import main_group
from zluda_runner.release.cache import CacheLayout, ensure_release
from zluda_runner.release.fetch import RetryPolicy, TransferError

NAME = "zluda-linux-abc1234.tar.gz"


def _asset(kit, url: str, data: bytes):
    return kit.Asset(name=NAME, url=url, sha256=kit.sha256(data), format="tar.gz", size=len(data))


def test_a_fetch_that_got_nothing_says_nothing_was_kept(tmp_path, server, kit, fast_retry, cache_listing):
    data = kit.tar_gz(kit.ZLUDA_LIKE)
    url = server.add("/x.tar.gz", data)
    server.fail_status, server.fails_left = 503, 99
    with pytest.raises(TransferError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, data), tmp_path / "cache", retry=fast_retry)
    assert info.value.kept == 0  # on 5c673db: said it kept the partial file after 0 bytes, then deleted it
    assert cache_listing(tmp_path / "cache") == []


def test_a_fetch_cut_short_keeps_the_part_and_says_so(tmp_path, server, kit, fast_retry, cache_listing):
    data = kit.tar_gz([*kit.ZLUDA_LIKE, ("file", "zluda/blob.bin", bytes(range(256)) * 800)])
    url = server.add("/x.tar.gz", data)
    server.range_support = False  # every retry starts again from zero, and is cut again
    server.drop_after, server.drops_left = 1000, 99
    with pytest.raises(TransferError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, data), tmp_path / "cache", retry=fast_retry)
    partial = CacheLayout(tmp_path / "cache").partial_path("v5", NAME)
    assert partial.stat().st_size == 1000 == info.value.kept  # kept to resume, and said so


def _interrupted_fetch(tmp_path, server, kit, got: int):
    """A real fetch cut after ``got`` bytes, then Ctrl-C in the retry back-off: the part stays."""
    blob = random.Random(5).randbytes(100_000)  # not compressible, and the same each time
    data = kit.tar_gz([*kit.ZLUDA_LIKE, ("file", "zluda/blob.bin", blob)])
    url = server.add("/x.tar.gz", data)
    server.drop_after, server.drops_left = got, 1

    def interrupt(_seconds: float) -> None:
        raise KeyboardInterrupt

    cache = tmp_path / "cache"
    with pytest.raises(KeyboardInterrupt):
        ensure_release(kit.Release("v5"), _asset(kit, url, data), cache, retry=RetryPolicy(sleep=interrupt))
    return cache, data


def test_cache_list_shows_partial_downloads(tmp_path, server, kit, monkeypatch):
    cache, data = _interrupted_fetch(tmp_path, server, kit, 5000)
    partial = CacheLayout(cache).partial_path("v5", NAME)
    runner = CliRunner()
    monkeypatch.chdir(tmp_path)
    out = runner.invoke(main_group, ["--cache-dir", "cache", "cache", "list"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    # on 5c673db: only "no releases cached in ..."; now no release, then the partial download: its
    # release, asset, bytes so far of the total, its file, and the command that resumes it
    assert_golden("release-cache-list-partial", out.output, tmp=tmp_path)
    js = runner.invoke(main_group, ["--json", "--cache-dir", str(cache), "cache", "list"])
    assert js.exit_code == 0, js.output
    listed = json.loads(js.output)["partial"]
    assert [(p["release_id"], p["asset"], p["bytes_so_far"], p["total"], p["path"]) for p in listed] == [
        ("v5", NAME, 5000, len(data), str(partial))]
    assert listed[0]["url"] == server.url("/x.tar.gz")


def test_cache_list_partial_downloads_fit_80_columns(tmp_path, server, kit):
    cache, _data = _interrupted_fetch(tmp_path, server, kit, 5000)
    out = CliRunner().invoke(main_group, ["--cache-dir", str(cache), "cache", "list"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert all(len(line) <= 80 or " " not in line.strip() for line in lines), out.output
    assert any(NAME in line.split() or f"{NAME}:" in line.split() for line in lines), out.output


def test_a_file_that_is_not_ours_is_not_listed_as_partial(tmp_path):
    """Only a .part with our note beside it is a partial download (--cache-dir may be any folder)."""
    stray = tmp_path / "downloads" / "v5" / "notes.part"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"mine")
    out = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(tmp_path), "cache", "list"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["partial"] == []
