"""Credentials in URLs are never printed or stored (issue 20, nothing-lost item 13).

The old redaction (results/backends.py, a regular expression) kept ``?password=``, a password holding
``/`` or ``@``, and nothing else redacted at all: a mirror's ``user:pw@`` was in every download error
and in the cache's completion marker, a manifest URL's token was stored in ``origin.json`` and printed
by ``releases``. Now one function (core/redact.py) serves every place; errors mask on construction.
Real servers on 127.0.0.1. On 5c673db these fail (core.redact did not exist; with the old function
the secrets below leak)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.release.test_bounded_and_update import _doc
from zluda_runner.cli import main_group
from zluda_runner.core.errors import FetchError
from zluda_runner.release.cache import ensure_release
from zluda_runner.release.update import origin_path, update_manifest
from zluda_runner.results.backends import redact_url as results_redact

SECRET = "s3cr3t"  # noqa: S105  (a test value)


@pytest.mark.parametrize("url", [
    f"https://user:{SECRET}@mirror.example/z",
    f"https://user:a/{SECRET}@mirror.example/z",  # a password with a slash
    f"https://user:a@{SECRET}@mirror.example/z",  # ... with an at sign
    f"https://mirror.example/z?password={SECRET}&x=1",
    f"https://mirror.example/m.json?token={SECRET}",
    f"https://{SECRET}@github.com/o/r",  # a token as the user name
    f"postgresql://runner:p@ss/{SECRET}@db.example/results",
])
def test_one_redaction_masks_every_credential(url: str) -> None:
    from zluda_runner.core.redact import redact_text, redact_url

    shown = redact_url(url)
    assert SECRET not in shown and "***" in shown, shown
    assert results_redact(url) == shown  # the results store uses the same function
    assert SECRET not in redact_text(f"error: could not fetch {url}: refused")
    assert redact_url("https://mirror.example/z/a.tar.gz?x=1") == "https://mirror.example/z/a.tar.gz?x=1"


def test_manifest_token_is_not_stored_or_printed(tmp_path: Path, server) -> None:
    cache = tmp_path / "cache"
    server.add(f"/m.json?token={SECRET}", _doc(99))
    host = server.base[len("http://"):]
    url = f"http://reader:{SECRET}@{host}/m.json?token={SECRET}"
    result = update_manifest(cache, url)
    assert result.replaced and SECRET not in result.url
    stored = origin_path(cache).read_text()
    assert SECRET not in stored and json.loads(stored)["url"].startswith("http://reader:***@")
    listing = CliRunner().invoke(main_group, ["--cache-dir", str(cache), "releases", "--json"])
    assert "fetched" in listing.output or "origin" in listing.output, listing.output
    assert SECRET not in listing.output
    again = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(cache), "manifest", "update"])
    error = json.loads(again.output)  # the URL kept has no credentials: it is not fetched without them
    assert again.exit_code == 1 and error["kind"] == "manifest", error
    assert "http://reader:***@" in error["error"], error
    assert "ZLUDA_RUNNER_MANIFEST_URL" in error["hint"] and SECRET not in again.output


def test_a_mirrors_password_is_not_in_errors_or_the_cache(tmp_path: Path, server, kit, monkeypatch) -> None:
    payload = kit.tar_gz(kit.ZLUDA_LIKE)
    path = "/vosen/ZLUDA/releases/download/v5/zluda-linux-abc1234.tar.gz"
    server.add("/base" + path, payload)
    host = server.base[len("http://"):]
    asset = kit.Asset(name="zluda-linux-abc1234.tar.gz", url="https://github.com" + path,
                      sha256=kit.sha256(payload), format="tar.gz")
    cache = tmp_path / "cache"
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", f"http://user:a/{SECRET}@{host}/nowhere")
    with pytest.raises(FetchError) as info:
        ensure_release(kit.Release("v5"), asset, cache)
    assert SECRET not in str(info.value) and SECRET not in repr(info.value.args)
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", f"http://user:{SECRET}@{host}/base")
    folder = ensure_release(kit.Release("v5"), asset, cache)
    for stored in cache.rglob("*.json"):
        assert SECRET not in stored.read_text(), stored
    assert folder.is_dir()
