"""The packaged manifest loads, validates and says what it does not know."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from zluda_runner.core.errors import ManifestError
from zluda_runner.core.families import FAMILIES, parse_library_name
from zluda_runner.release.manifest import (
    Manifest,
    default_manifest_path,
    load_manifest,
    parse_manifest,
    resolve_release_root,
)
from zluda_runner.release.model import SCHEMA_VERSION


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest()


def test_packaged_manifest_has_the_releases_the_issue_names(manifest: Manifest) -> None:
    assert manifest.schema_version == SCHEMA_VERSION == 3
    ids = set(manifest.ids)
    assert {"upstream-v3", "upstream-v4", "upstream-v5", "upstream-v6"} <= ids
    assert {"fork-3.9.5", "fork-3.9.6"} <= ids
    tags = {r.tag for r in manifest.releases}
    for prefix in ("rel.5e71745", "rel.dba64c0", "rel.11cc584"):
        assert any(t.startswith(prefix) for t in tags), prefix
    fork = manifest.find("3.9.5")
    assert {a.name for a in fork.assets} == {
        "ZLUDA-windows-rocm5-amd64.zip",
        "ZLUDA-windows-rocm6-amd64.zip",
        "ZLUDA-nightly-windows-rocm6-amd64.zip",
        "ZLUDA-linux-amd64.tar.gz",
    }


def test_every_asset_has_https_url_and_hash_or_explicit_unknown(manifest: Manifest) -> None:
    raw = json.loads(default_manifest_path().read_text())
    for rel in raw["releases"]:
        for asset in rel["assets"]:
            assert asset["url"].startswith("https://github.com/"), asset["url"]
            assert asset["url"].endswith(f"/releases/download/{rel['tag']}/{asset['name']}")
            assert asset["sha256"] == "unknown" or re.fullmatch(r"[0-9a-f]{64}", asset["sha256"])
    for rel in manifest.releases:
        for asset in rel.assets:
            assert asset.hash_known == (asset.sha256 is not None)


def test_rewrite_assets_follow_ci_naming_and_v6_hashes_are_pinned(manifest: Manifest) -> None:
    v6 = manifest.find("upstream-v6")
    names = {a.os: a.name for a in v6.assets}
    assert re.fullmatch(r"zluda-linux-[0-9a-f]{7,}\.tar\.gz", names["linux"])
    assert re.fullmatch(r"zluda-windows-[0-9a-f]{7,}\.zip", names["windows"])
    assert all(a.hash_known for a in v6.assets)


def test_file_entries_use_family_vocabulary_and_consistent_load_names(manifest: Manifest) -> None:
    for rel in manifest.releases:
        for asset in rel.assets:
            for f in asset.files:
                assert f.family in FAMILIES
                for name in f.load_names:
                    parsed = parse_library_name(name)
                    if parsed:
                        assert parsed.family == f.family and parsed.os == asset.os


def test_fork_nvrtc_needs_original_saved_and_env(manifest: Manifest) -> None:
    asset = manifest.find("fork-3.9.5").asset("ZLUDA-windows-rocm6-amd64.zip")
    (nvrtc,) = asset.files_for("nvrtc")
    assert nvrtc.load_names == ["nvrtc64_112_0.dll"]
    assert nvrtc.original_saved_as == "nvrtc_cuda.dll"
    assert "ZLUDA_NVRTC_LIB" in nvrtc.needs_env
    (cublas,) = asset.files_for("cublas")
    assert (cublas.path, cublas.cuda_major, cublas.load_names) == ("cublas.dll", 11, ["cublas64_11.dll"])
    assert any("CUDA 12" in c for c in manifest.find("fork-3.9.5").caveats)
    assert any("DISABLE_ADDMM_CUDA_LT=1" in c for c in manifest.find("fork-3.9.5").caveats)


def test_round_trips_through_json(manifest: Manifest) -> None:
    again = Manifest.from_json(manifest.to_json())
    assert again == manifest


def test_find_matches_id_version_and_tag_and_hints_close_matches(manifest: Manifest) -> None:
    rel = manifest.find("fork-3.9.5")
    assert manifest.find(rel.tag) is rel
    assert manifest.find("3.9.5") is rel
    assert manifest.find("v6").id == "upstream-v6"
    with pytest.raises(ManifestError) as err:
        manifest.find("fork-3.9.7")
    assert "fork-3.9.7" in err.value.message
    assert err.value.hint and "fork-3.9.6" in err.value.hint


def test_resolve_release_root_tolerates_layouts(manifest: Manifest, tmp_path: Path) -> None:
    asset = copy.deepcopy(manifest.find("fork-3.9.5").asset("ZLUDA-windows-rocm6-amd64.zip"))
    nested = tmp_path / "nested"
    (nested / "zluda").mkdir(parents=True)
    (nested / "zluda" / "cublas.dll").write_bytes(b"x")
    assert resolve_release_root(nested, asset) == nested / "zluda"
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "cublas.dll").write_bytes(b"x")
    assert resolve_release_root(flat, asset) == flat  # declared "zluda", but the files are on top
    asset.archive_root = None
    odd = tmp_path / "odd"
    (odd / "a" / "b").mkdir(parents=True)
    (odd / "readme.txt").write_text("x")
    (odd / "a" / "b" / "nvcuda.dll").write_bytes(b"x")
    assert resolve_release_root(odd, asset) == odd / "a" / "b"


def test_parse_manifest_accepts_a_minimal_valid_document() -> None:
    doc = {
        "schema_version": 2,
        "manifest_version": 3,
        "updated": "2026-01",
        "published_by": "a test",
        "releases": [
            {
                "id": "upstream-v9", "flavour": "upstream", "version": "9", "tag": "v9",
                "repo": "vosen/ZLUDA",
                "provenance": {k: {"kind": "unverified", "note": "test"}
                               for k in ("date", "prerelease", "gpu_generations")},
                "assets": [
                    {
                        "name": "zluda-linux-abc.tar.gz",
                        "url": "https://github.com/vosen/ZLUDA/releases/download/v9/zluda-linux-abc.tar.gz",
                        "os": "linux", "arch": "x86_64", "format": "tar.gz", "sha256": "A" * 64,
                        "size": None, "hip": {"kind": "runtime", "min": "6.0"}, "cuda_majors": [12],
                        "provenance": {
                            **{k: {"kind": "unverified", "note": "test"}
                               for k in ("name", "size", "hip", "cuda_majors", "files", "launchers")},
                            "sha256": {"kind": "third-party pin", "independent": 1, "sources": [
                                {"kind": "third-party pin", "ref": "someone/project:pins.txt@" + "0" * 40}]},
                        },
                    }
                ],
            }
        ],
    }
    m = parse_manifest(doc)
    asset = m.releases[0].assets[0]
    assert asset.sha256 == "a" * 64 and asset.hip.accepts("6.2") and not asset.hip.accepts("5.7")
