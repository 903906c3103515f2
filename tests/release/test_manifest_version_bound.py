"""``manifest_version`` is bounded (issue 20, nothing-lost item 12).

On 5c673db a manifest with ``manifest_version`` 10**30 was accepted, and from then on every real update
was "older" and refused, with no way back. Now such a manifest is refused with the field named, and a
cache an older zluda-runner poisoned that way is ignored (the packaged manifest is used), so the next
update goes through. These tests fail on 5c673db."""

from __future__ import annotations

import json

import pytest

from tests.release.test_bounded_and_update import _cached, _doc, _Server, manifest_server  # noqa: F401
from zluda_runner.core.errors import ManifestError
from zluda_runner.release import validation
from zluda_runner.release.manifest import cached_manifest_path, default_manifest_path, load_current_manifest
from zluda_runner.release.update import update_manifest
from zluda_runner.release.validation import parse_manifest

MAX_MANIFEST_VERSION = getattr(validation, "MAX_MANIFEST_VERSION", 2**31 - 1)  # (absent on 5c673db)
NEXT = int(json.loads(default_manifest_path().read_text())["manifest_version"]) + 1  # newer than the packaged


@pytest.mark.parametrize("version", [10**30, MAX_MANIFEST_VERSION + 1, 10**5000],
                         ids=["1e30", "max+1", "5000-digits"])
def test_an_absurd_manifest_version_is_refused_with_the_field_named(version: int) -> None:
    doc = json.loads(default_manifest_path().read_text())
    doc["manifest_version"] = version
    with pytest.raises(ManifestError) as info:
        parse_manifest(doc, source="m.json")
    assert "manifest_version" in info.value.message and str(MAX_MANIFEST_VERSION) in info.value.message
    assert len(info.value.message) < 600  # a 5000-digit number is not printed
    doc["manifest_version"] = MAX_MANIFEST_VERSION
    assert parse_manifest(doc).manifest_version == MAX_MANIFEST_VERSION


def test_an_update_to_an_absurd_version_replaces_nothing(manifest_server: _Server, tmp_path) -> None:  # noqa: F811
    cache = tmp_path / "cache"
    manifest_server.files["/m.json"] = _doc(10**30)
    with pytest.raises(ManifestError) as info:
        update_manifest(cache, manifest_server.base + "/m.json")
    assert "manifest_version" in info.value.message
    assert _cached(cache) is None
    manifest_server.files["/m.json"] = _doc(NEXT)
    assert update_manifest(cache, manifest_server.base + "/m.json").replaced  # later updates still work


def test_a_cache_poisoned_with_an_absurd_version_is_ignored_and_the_next_update_works(
        manifest_server: _Server, tmp_path) -> None:  # noqa: F811
    cache = tmp_path / "cache"
    poisoned = cached_manifest_path(cache)  # what an older zluda-runner accepted and wrote
    poisoned.parent.mkdir(parents=True)
    poisoned.write_bytes(_doc(10**30))
    assert load_current_manifest(None, cache).source == str(default_manifest_path())
    manifest_server.files["/m.json"] = _doc(NEXT)
    result = update_manifest(cache, manifest_server.base + "/m.json")
    assert result.replaced and result.manifest_version == NEXT, result.message
    assert _cached(cache) == _doc(NEXT)
