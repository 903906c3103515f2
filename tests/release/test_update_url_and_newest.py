"""``manifest update`` with no URL fetches from the URL the manifest in use publishes itself at
(``update_url``), and ``releases`` says when the manifest in use is older than the newest one this
installation knows of: the packaged one, the cached copy of the last update, or the version that update
fetched (recorded in ``origin.json``) (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.release.test_bounded_and_update import _cached, _Server, manifest_server  # noqa: F401
from zluda_runner.cli import main_group
from zluda_runner.core.errors import ManifestError
from zluda_runner.release.manifest import cached_manifest_path, default_manifest_path
from zluda_runner.release.update import origin_path, published_url, update_manifest
from zluda_runner.release.validation import parse_manifest

PACKAGED = json.loads(default_manifest_path().read_text())
VERSION = int(PACKAGED["manifest_version"])


def _doc(version: int, **extra: object) -> bytes:
    doc = dict(PACKAGED, manifest_version=version, **extra)
    return json.dumps(doc).encode()


def test_update_without_url_uses_the_published_url(manifest_server: _Server, tmp_path: Path,  # noqa: F811
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZLUDA_RUNNER_MANIFEST_URL", raising=False)
    cache = tmp_path / "cache"
    # a cached manifest (put there by hand, no origin.json) that names where its publisher publishes
    cached = cached_manifest_path(cache)
    cached.parent.mkdir(parents=True)
    cached.write_bytes(_doc(VERSION + 1, update_url="https://example.org/zluda-releases.json"))
    assert published_url(cache) == "https://example.org/zluda-releases.json"
    assert published_url(tmp_path / "empty") == PACKAGED.get("update_url")
    # `manifest update` with no URL fetches from it (here the test server's plain-http loopback URL stands
    # in for the https one: update_url itself must be https)
    published = manifest_server.base + "/published.json"
    manifest_server.files["/published.json"] = _doc(VERSION + 2)
    monkeypatch.setattr("zluda_runner.release.update.published_url", lambda cache_dir: published)
    res = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(cache), "manifest", "update"])
    assert res.exit_code == 0, res.output
    done = json.loads(res.output)
    assert (done["url"], done["replaced"], done["manifest_version"], done["previous_version"]) == (
        published, True, VERSION + 2, VERSION + 1)
    assert _cached(cache) == _doc(VERSION + 2)


def test_no_url_anywhere_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZLUDA_RUNNER_MANIFEST_URL", raising=False)
    assert "update_url" not in PACKAGED or PACKAGED["update_url"]  # the packaged one: none, or a real one
    if "update_url" in PACKAGED:
        pytest.skip("the packaged manifest names its published URL")
    with pytest.raises(ManifestError, match="update_url"):  # the field that would name one
        update_manifest(tmp_path / "cache", None)


@pytest.mark.parametrize("bad", ["http://example.org/m.json", "https://user:pw@example.org/m.json", "ftp://x/m"])
def test_update_url_must_be_https_without_credentials(bad: str) -> None:
    with pytest.raises(ManifestError, match=r"'update_url'.*https://"):  # the field, what it must be
        parse_manifest(dict(PACKAGED, update_url=bad), "t.json")


def test_releases_warns_when_the_manifest_in_use_is_older_than_the_packaged(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_bytes(_doc(VERSION - 1))
    res = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(tmp_path / "c"), "--manifest",
                                          str(old), "releases"])
    assert res.exit_code == 0, res.output
    [older] = [w for w in json.loads(res.stdout)["warnings"] if str(default_manifest_path()) in w]
    assert f"version {VERSION - 1}" in older and f"version {VERSION} " in older  # in use, packaged
    same = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(tmp_path / "c"), "releases"])
    assert not [w for w in json.loads(same.stdout)["warnings"] if str(default_manifest_path()) in w]


def test_releases_warns_when_the_last_update_fetched_a_newer_one(tmp_path: Path) -> None:
    """The cached copy is gone (cleaned by hand), origin.json still says what the last update fetched."""
    cache = tmp_path / "cache"
    origin = origin_path(cache)
    origin.parent.mkdir(parents=True)
    origin.write_text(json.dumps({"url": "https://example.org/m.json", "fetched": "2026-11-30T10:00:00Z",
                                  "manifest_version": VERSION + 5, "updated": "2026-11-30"}))
    res = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(cache), "releases"])
    warnings = json.loads(res.output)["warnings"]
    assert any(all(d in w for d in (f"version {VERSION + 5}", "2026-11-30", "https://example.org/m.json"))
               for w in warnings), warnings
