"""The device identity each release reports (issue 22): ``compute_capability`` with its source."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from zluda_runner.core.errors import ManifestError
from zluda_runner.release.manifest import default_manifest_path, load_manifest
from zluda_runner.release.validation import parse_manifest

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def good() -> Doc:
    return json.loads(default_manifest_path().read_text())


def _release(doc: Doc, rid: str) -> Doc:
    return next(r for r in doc["releases"] if r["id"] == rid)


def test_v6_reports_8_8_and_v7_previews_8_5_with_sources() -> None:
    m = load_manifest()
    v6 = m.find("upstream-v6").compute_capability
    assert v6 is not None and v6.text == "8.8" and v6.override_env == "ZLUDA_CC"
    assert v6.source.kind == "publisher" and "zluda_common/src/constants.rs@3fe1206" in v6.source.refs()
    p10 = m.find("upstream-v7-preview.10").compute_capability
    assert p10 is not None and (p10.major, p10.minor) == (8, 5)
    # observed, not inferred (issue 29): a third party's run of v7-preview.10 printed 8.5; the source's
    # 8.8 -> 8.5 (v7-preview.8, #670) beside it
    assert p10.source.kind == "third-party usage"
    assert p10.source.sources[0].ref == "code-index:68830774714"
    assert "6e7abfd2777b96baeaac26a3719a571b770e338e" in p10.source.refs()
    assert "https://github.com/vosen/ZLUDA/pull/670" in p10.source.refs()
    p11 = m.find("upstream-v7-preview.11").compute_capability
    assert p11 is not None and p11.source.kind == "inferred"  # no run of v7-preview.11 seen: still inferred
    assert p10.describe() == "compute capability 8.5 (override: ZLUDA_CC=MAJOR.MINOR)"
    assert m.find("upstream-v3").compute_capability is None  # not recorded: not guessed


def test_compute_capability_round_trips_through_json() -> None:
    rel = load_manifest().find("upstream-v6")
    again = type(rel).from_dict(json.loads(json.dumps(rel.to_dict())))
    assert again.compute_capability == rel.compute_capability


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda cc: cc.update(minor="8"), "minor"),
        (lambda cc: cc.update(override_env="zluda cc"), "override_env"),
        (lambda cc: cc.update(source={"kind": "unverified", "note": "guess"}), "source"),
        (lambda cc: cc.update(sm="8.8"), "sm"),
        (lambda cc: cc.pop("source"), "source"),
    ],
)
def test_malformed_compute_capability_is_refused_naming_the_field(good: Doc, change: Any, field: str) -> None:
    doc = copy.deepcopy(good)
    change(_release(doc, "upstream-v6")["compute_capability"])
    with pytest.raises(ManifestError, match=rf"release 'upstream-v6' compute_capability: field '{field}'"):
        parse_manifest(doc, "test.json")


def test_a_commit_needs_its_source_and_a_source_needs_its_commit(good: Doc, tmp_path: Path) -> None:
    doc = copy.deepcopy(good)
    rel = _release(doc, "upstream-v6")
    rel["commit"] = "3fe12063f4b864f39376718bb212c6b80a55cab3"
    rel["provenance"].pop("commit", None)
    # the field that is wrong, named: no source for the commit, then a source for no commit
    with pytest.raises(ManifestError, match=r"release 'upstream-v6': field 'provenance\.commit' "):
        parse_manifest(doc, "test.json")
    rel["commit"] = "3FE1206"
    with pytest.raises(ManifestError, match=r"field 'commit' .*'3FE1206'"):
        parse_manifest(doc, "test.json")
    del rel["commit"]
    rel["provenance"]["commit"] = {"kind": "publisher", "sources": [
        {"kind": "publisher", "ref": "https://github.com/vosen/ZLUDA/releases/tag/v6"}]}
    with pytest.raises(ManifestError, match=r"release 'upstream-v6': field 'commit' "):
        parse_manifest(doc, "test.json")
