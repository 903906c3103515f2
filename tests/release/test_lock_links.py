"""A symlinked lock file in the cache is a clear error, never followed (issue 20, nothing-lost item 15).

filelock opens its file with O_NOFOLLOW, so a lock replaced by a symbolic link made ``fetch``,
``cache clean`` and a first-use trust record end in an OSError traceback (ELOOP). Now each says
which lock file it is and to remove it, and nothing is created where the link points. Real release
installed from a real server on 127.0.0.1; on 5c673db these raised OSError."""

from __future__ import annotations

import pytest

from zluda_runner.core.errors import CacheError
from zluda_runner.release.cache import CacheLayout, clean_cache, ensure_release


def _installed(tmp_path, server, kit):
    payload = kit.tar_gz(kit.ZLUDA_LIKE)
    url = server.add("/v5/zluda-linux-abc1234.tar.gz", payload)
    asset = kit.Asset(name="zluda-linux-abc1234.tar.gz", url=url, sha256=kit.sha256(payload), format="tar.gz")
    cache = tmp_path / "cache"
    folder = ensure_release(kit.Release("v5"), asset, cache)
    return cache, asset, folder


def test_a_symlinked_release_lock_is_a_clear_error(tmp_path, server, kit) -> None:
    cache, asset, folder = _installed(tmp_path, server, kit)
    lock = CacheLayout(cache).lock_path("v5")
    lock.unlink(missing_ok=True)
    lock.symlink_to(tmp_path / "elsewhere.lock")
    with pytest.raises(CacheError) as info:
        clean_cache(cache)
    assert info.value.kind == "cache" and str(lock) in info.value.message and lock.is_symlink()
    assert info.value.hint and "Remove" in info.value.hint
    with pytest.raises(CacheError) as again:
        ensure_release(kit.Release("v5"), asset, cache, reinstall=True)
    assert str(lock) in again.value.message
    assert folder.is_dir() and not (tmp_path / "elsewhere.lock").exists()


def test_a_symlinked_trust_lock_is_a_clear_error(tmp_path, tls_server, kit, monkeypatch) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "cert.pem"))
    payload = kit.tar_gz(kit.ZLUDA_LIKE)
    url = tls_server.add("/x.tar.gz", payload)
    asset = kit.Asset(name="x.tar.gz", url=url, sha256=None, format="tar.gz")
    cache = tmp_path / "cache"
    locks = CacheLayout(cache).locks
    locks.mkdir(parents=True)
    (locks / "trust.lock").symlink_to(tmp_path / "elsewhere.lock")
    with pytest.raises(CacheError) as info:
        ensure_release(kit.Release("fork-3.9.5"), asset, cache, trust_on_first_use=True)
    assert str(locks / "trust.lock") in info.value.message
    assert not (tmp_path / "elsewhere.lock").exists() and not (cache / "trust.json").exists()
