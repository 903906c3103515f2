"""Partial downloads are told truly: a fetch that got nothing keeps nothing and says so; one that got
part of the file keeps it, and ``cache list`` shows it (bytes so far of the total, resumed next time)."""

from __future__ import annotations

import pytest

from zluda_runner.release.cache import CacheLayout, ensure_release
from zluda_runner.release.fetch import TransferError

NAME = "zluda-linux-abc1234.tar.gz"


def _asset(kit, url: str, data: bytes):
    return kit.Asset(name=NAME, url=url, sha256=kit.sha256(data), format="tar.gz", size=len(data))


def test_a_fetch_that_got_nothing_says_nothing_was_kept(tmp_path, server, kit, fast_retry, cache_listing):
    data = kit.tar_gz(kit.ZLUDA_LIKE)
    url = server.add("/x.tar.gz", data)
    server.fail_status, server.fails_left = 503, 99
    with pytest.raises(TransferError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, data), tmp_path / "cache", retry=fast_retry)
    msg = info.value.message
    assert "kept the partial file" not in msg  # on 5c673db: said so after 0 bytes, then deleted it
    assert "nothing was downloaded" in msg and "nothing was kept" in msg
    assert cache_listing(tmp_path / "cache") == []


def test_a_fetch_cut_short_keeps_the_part_and_says_so(tmp_path, server, kit, fast_retry, cache_listing):
    data = kit.tar_gz([*kit.ZLUDA_LIKE, ("file", "zluda/blob.bin", bytes(range(256)) * 800)])
    url = server.add("/x.tar.gz", data)
    server.range_support = False  # every retry starts again from zero, and is cut again
    server.drop_after, server.drops_left = 1000, 99
    with pytest.raises(TransferError) as info:
        ensure_release(kit.Release("v5"), _asset(kit, url, data), tmp_path / "cache", retry=fast_retry)
    assert "kept the partial file to resume" in info.value.message
    partial = CacheLayout(tmp_path / "cache").partial_path("v5", NAME)
    assert partial.stat().st_size == 1000
