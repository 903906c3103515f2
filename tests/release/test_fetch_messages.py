"""What fetch quotes of another library's error is one clean clause: one line, bounded, credentials
masked, and no second period after requests' own ("Exceeded 30 redirects.." before)."""

from __future__ import annotations

import pytest

from zluda_runner.core.errors import FetchError
from zluda_runner.release.cache import ensure_release
from zluda_runner.release.fetch import download
from zluda_runner.release.httpguard import REASON_CHARS, clause, client_url, reason, sentence


def test_a_redirect_loop_is_one_clean_sentence(tmp_path, server, kit, fast_retry):
    server.redirects["/loop.tar.gz"] = "/loop.tar.gz"
    url = server.url("/loop.tar.gz")
    with pytest.raises(FetchError) as info:
        download(url, tmp_path / "x.part", expected_sha256="e" * 64, retry=fast_retry)
    message = info.value.message
    assert "Exceeded 30 redirects" in message and url in message
    assert ".." not in message and message.endswith("redirects.")
    assert not (tmp_path / "x.part").exists()


def test_an_invalid_download_url_is_bounded_and_ends_once(tmp_path, fast_retry):
    url = "https://" + "h" * 2000 + ".example:99999/x.tar.gz"
    with pytest.raises(FetchError) as info:
        download(url, tmp_path / "x.part", expected_sha256="e" * 64, retry=fast_retry)
    message = info.value.message
    assert info.value.kind == "fetch" and ".." not in message
    assert message.endswith((".", "\u2026"))
    assert message.count("h" * 2000) == 1  # the URL itself once (it is ours); requests' echo of it cut
    assert len(message) < 2000 + 2 * REASON_CHARS


def test_an_unusable_url_in_client_url_is_bounded():
    url = "http://user:secret@[::1" + "x" * 3000
    with pytest.raises(FetchError) as info:
        client_url(url)
    assert "secret" not in info.value.message and len(info.value.message) < 2 * REASON_CHARS + 100


def test_clause_and_sentence():
    assert clause("Exceeded 30 redirects.") == "Exceeded 30 redirects"
    assert clause("line one\n  line two. ") == "line one line two"
    long = clause("x" * 5000)
    assert len(long) == REASON_CHARS and long.endswith("\u2026")
    assert sentence("done") == "done." and sentence("done.") == "done." and sentence("why?") == "why?"


def test_reason_is_the_innermost_cause_masked_and_bounded():
    try:
        try:
            raise OSError("https://user:hunter2@host/x failed " + "y" * 1000 + ".")
        except OSError as inner:
            raise RuntimeError("outer") from inner
    except RuntimeError as exc:
        text = reason(exc)
    assert "hunter2" not in text and text.startswith("https://") and len(text) <= REASON_CHARS
    assert not text.endswith(".")


def test_ensure_release_reports_the_loop_once(tmp_path, server, kit, fast_retry):
    server.redirects["/loop.tar.gz"] = "/loop.tar.gz"
    url = server.url("/loop.tar.gz")
    asset = kit.Asset(name="zluda-linux-abc1234.tar.gz", url=url, sha256="e" * 64, format="tar.gz")
    with pytest.raises(FetchError) as info:
        ensure_release(kit.Release("v5"), asset, tmp_path / "cache", retry=fast_retry)
    assert "redirects.." not in info.value.message and "Exceeded 30 redirects." in info.value.message
