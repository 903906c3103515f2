"""The manifest's two numbers: ``schema_version`` (the format) and ``manifest_version`` (one step per
published content).

Found at the start of this stop: the manifest at 2a097bf had two fields no schema-2 reader knows (a
release's ``unimplemented``, the top level's ``native_rocm``) under ``schema_version`` 2, so zluda-runner as
it landed at 3abffb6 refused it on ``manifest update`` as an unknown field ("a typo?"); and its content had
changed eight times under ``manifest_version`` 3, so an installation holding an earlier version 3 was told
it already had it and kept the old facts. Now: schema 3 names what it added (older schemas still read,
their new fields refused by name), a schema above ours says to upgrade zluda-runner (as data: ``details``),
and the published content is pinned per ``manifest_version`` here, so a change to the manifest without a
new version fails this test.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.core.errors import ManifestError
from zluda_runner.release.manifest import default_manifest_path, load_manifest, parse_manifest
from zluda_runner.release.model import OLDEST_SCHEMA_VERSION, SCHEMA_ADDED, SCHEMA_VERSION

#: the SHA-256 of each published manifest's content (its JSON, keys sorted, no spaces): a manifest whose
#: content changes takes the next manifest_version and its line here (what `manifest update` compares)
PUBLISHED = {
    3: "48786f35bb16494ecf3f597fc012449b88e9fa122a4856661887424386418992",  # as it landed at 2a097bf
    4: "d130c95e2a9c5547f920146c64c64a1cb374b2112688d3bdd228a57cdb3373b3",  # schema 3
    5: "8fe0432f9e8459e7fe32fb9a4bef61b04c586ec5594373b5be97b188b596c3a4",  # cuBLAS caveats name probe cases
}


def _packaged() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(default_manifest_path().read_text(encoding="utf-8"))
    return data


def _content_hash(data: object) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _as_schema_2(data: dict[str, Any]) -> dict[str, Any]:
    """The packaged manifest without what schema 3 added: what a schema-2 publisher writes."""
    old = copy.deepcopy(data)
    old["schema_version"] = 2
    old.pop("native_rocm", None)
    for release in old["releases"]:
        release.pop("unimplemented", None)
    return old


def test_the_packaged_manifest_is_a_published_version_of_its_content() -> None:
    data = _packaged()
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["manifest_version"] == max(PUBLISHED), "a new manifest_version needs its line in PUBLISHED"
    assert _content_hash(data) == PUBLISHED[data["manifest_version"]], (
        "the manifest changed under a published manifest_version: give it the next one (and its hash here), "
        "or `manifest update` keeps the old content on every installation that has this version")


def test_the_packaged_manifest_uses_what_schema_3_added() -> None:
    manifest = load_manifest()
    assert SCHEMA_ADDED[3] == ("unimplemented", "native_rocm")
    assert manifest.native_rocm is not None
    assert any(r.unimplemented is not None for r in manifest.releases)


def test_an_older_schema_is_still_read() -> None:
    """A cached copy of an older update (schema 2) stays usable: what it has, read the same."""
    old = parse_manifest(_as_schema_2(_packaged()), source="old.json")
    assert (old.schema_version, OLDEST_SCHEMA_VERSION) == (2, 2)
    assert old.native_rocm is None and all(r.unimplemented is None for r in old.releases)
    assert old.ids == load_manifest().ids


@pytest.mark.parametrize("field", ["unimplemented", "native_rocm"])
def test_a_field_newer_than_the_manifests_schema_is_refused_by_name(field: str) -> None:
    data = _as_schema_2(_packaged())
    packaged = _packaged()
    if field == "native_rocm":
        data["native_rocm"] = packaged["native_rocm"]
        where = "top level"
    else:
        release = next(r for r in packaged["releases"] if "unimplemented" in r)
        mine = next(r for r in data["releases"] if r["id"] == release["id"])
        mine["unimplemented"] = release["unimplemented"]
        where = f"release '{release['id']}'"
    with pytest.raises(ManifestError) as err:
        parse_manifest(data, source="m.json")
    assert err.value.details == {"where": where, "field": field, "schema_version": 2, "added_in": 3}
    assert err.value.hint


@pytest.mark.parametrize("schema", [1, 0, "3", True, None])
def test_a_schema_this_program_never_read_is_refused_as_the_field(schema: object) -> None:
    data = _packaged()
    data["schema_version"] = schema
    with pytest.raises(ManifestError) as err:
        parse_manifest(data, source="m.json")
    assert err.value.details == {"where": "top level", "field": "schema_version"}


def test_a_newer_schema_says_upgrade_zluda_runner_as_data(tmp_path: Path) -> None:
    data = _packaged()
    data["schema_version"] = SCHEMA_VERSION + 1
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ManifestError) as err:
        load_manifest(path)
    assert err.value.details == {"where": "top level", "field": "schema_version",
                                 "schema_version": SCHEMA_VERSION + 1, "reads": [2, SCHEMA_VERSION]}
    assert err.value.hint
    res = CliRunner().invoke(main_group, ["--json", "--manifest", str(path), "releases", "--os", "linux"])
    error = json.loads(res.stdout)
    assert (res.exit_code, error["kind"], error["details"]["field"]) == (1, "manifest", "schema_version")
    assert error["details"]["reads"] == [2, SCHEMA_VERSION]
