"""Malformed manifests are rejected, naming the release and the field."""

from __future__ import annotations

import copy
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zluda_runner.core.errors import ManifestError
from zluda_runner.release.manifest import default_manifest_path, load_manifest

Doc = dict[str, Any]


@pytest.fixture(scope="module")
def good() -> Doc:
    return json.loads(default_manifest_path().read_text())


def _fork(doc: Doc) -> Doc:
    return next(r for r in doc["releases"] if r["id"] == "fork-3.9.5")


def _rocm6(doc: Doc) -> Doc:
    return next(a for a in _fork(doc)["assets"] if a["name"] == "ZLUDA-windows-rocm6-amd64.zip")


def _drop_tag(doc: Doc) -> None:
    del _fork(doc)["tag"]


def _bad_sha(doc: Doc) -> None:
    _rocm6(doc)["sha256"] = "abc123"


def _bad_os(doc: Doc) -> None:
    _rocm6(doc)["os"] = "macos"


def _http_url(doc: Doc) -> None:
    _rocm6(doc)["url"] = _rocm6(doc)["url"].replace("https://", "http://")


def _bad_family(doc: Doc) -> None:
    _rocm6(doc)["files"][2]["family"] = "cublas_typo"


def _linux_name_in_windows(doc: Doc) -> None:
    _rocm6(doc)["files"][2]["load_names"] = ["libcublas.so.11"]


def _bad_format(doc: Doc) -> None:
    _rocm6(doc)["format"] = "tar.gz"


def _hip_range_inverted(doc: Doc) -> None:
    _rocm6(doc)["hip"] = {"kind": "sdk", "min": "6.4", "max": "6.2"}


def _unknown_field(doc: Doc) -> None:
    _rocm6(doc)["sha265"] = "unknown"


def _escaping_path(doc: Doc) -> None:
    _rocm6(doc)["files"][0]["path"] = "../nvcuda.dll"


def _url_of_other_tag(doc: Doc) -> None:
    _rocm6(doc)["url"] = _rocm6(doc)["url"].replace("rel.5e71745", "rel.dba64c0")


def _url_of_other_repo(doc: Doc) -> None:
    _rocm6(doc)["url"] = _rocm6(doc)["url"].replace("lshqqytiger/ZLUDA", "someone/ZLUDA")


def _linux_asset_needs_hip_sdk(doc: Doc) -> None:
    linux = next(a for a in _fork(doc)["assets"] if a["os"] == "linux")
    linux["hip"] = {"kind": "sdk", "min": "6.2"}


def _saved_as_path(doc: Doc) -> None:
    nvrtc = next(f for f in _rocm6(doc)["files"] if f["family"] == "nvrtc")
    nvrtc["original_saved_as"] = "../nvrtc_cuda.dll"


def _cuda_major_not_a_number(doc: Doc) -> None:
    _rocm6(doc)["cuda_majors"] = ["11"]


def _missing_hip(doc: Doc) -> None:
    del _rocm6(doc)["hip"]


def _size_unbounded(doc: Doc) -> None:
    _rocm6(doc)["size"] = 10**30  # the size bounds the download: this one bounded nothing


CASES: list[tuple[Callable[[Doc], None], str, str]] = [
    (_size_unbounded, "'ZLUDA-windows-rocm6-amd64.zip'", f"field 'size' must be at most {1 << 30} bytes"),
    (_url_of_other_tag, "'ZLUDA-windows-rocm6-amd64.zip'", "field 'url' must be the release asset of"),
    (_url_of_other_repo, "'ZLUDA-windows-rocm6-amd64.zip'", "field 'url' must be the release asset of"),
    (_linux_asset_needs_hip_sdk, "'ZLUDA-linux-amd64.tar.gz'",
     "field 'hip' kind 'sdk' does not exist on linux"),
    (_saved_as_path, "file #", "field 'original_saved_as' must be a file name"),
    (_cuda_major_not_a_number, "'ZLUDA-windows-rocm6-amd64.zip'", "field 'cuda_majors' must be a list"),
    (_missing_hip, "'ZLUDA-windows-rocm6-amd64.zip'", "field 'hip' is missing"),
    (_drop_tag, "release 'fork-3.9.5'", "field 'tag' is missing"),
    (_bad_sha, "asset #0 'ZLUDA-windows-rocm6-amd64.zip'", "field 'sha256' must be 64 hex digits or"),
    (_bad_os, "'ZLUDA-windows-rocm6-amd64.zip'", "field 'os' must be one of linux, windows"),
    (_http_url, "'ZLUDA-windows-rocm6-amd64.zip'", "field 'url' must be an https:// URL"),
    (_bad_family, "file #2", "field 'family' is not a known library family"),
    (_linux_name_in_windows, "file #2", "is a linux library name in a windows asset"),
    (_bad_format, "'ZLUDA-windows-rocm6-amd64.zip'", "field 'format'"),
    (_hip_range_inverted, "hip", "field 'min' 6.4 is above max 6.2"),
    (_unknown_field, "'ZLUDA-windows-rocm6-amd64.zip'", "field 'sha265' is not part of the schema"),
    (_escaping_path, "file #0", "must be a relative path inside the release"),
]


@pytest.mark.parametrize(("mutate", "where", "problem"), CASES, ids=[c[0].__name__ for c in CASES])
def test_bad_field_is_named(
    good: Doc, tmp_path: Path, mutate: Callable[[Doc], None], where: str, problem: str
) -> None:
    doc = copy.deepcopy(good)
    mutate(doc)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ManifestError) as err:
        load_manifest(path)
    msg = err.value.message
    assert "release 'fork-3.9.5'" in msg
    assert where in msg
    assert problem in msg
    assert str(path) in msg
    assert err.value.hint


def test_duplicate_release_id_is_rejected(good: Doc, tmp_path: Path) -> None:
    doc = copy.deepcopy(good)
    twin = copy.deepcopy(_fork(doc))
    twin["tag"] = "rel.0000000000000000000000000000000000000000"
    for asset in twin["assets"]:
        asset["url"] = asset["url"].replace(_fork(doc)["tag"], twin["tag"])
    doc["releases"].append(twin)
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match=r"dup\.json: release 'fork-3\.9\.5': field 'id' "):
        load_manifest(path)


def test_missing_release_id_names_the_index(good: Doc, tmp_path: Path) -> None:
    doc = copy.deepcopy(good)
    del doc["releases"][2]["id"]
    path = tmp_path / "noid.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match=r"release #2: field 'id' is missing"):
        load_manifest(path)


def test_not_json_is_rejected_with_position(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"schema_version": 1,\n "releases": [}\n')
    with pytest.raises(ManifestError, match=r"broken\.json .*\bline 2, column 15\b"):
        load_manifest(path)


def test_wrong_schema_version_and_missing_file(good: Doc, tmp_path: Path) -> None:
    doc = copy.deepcopy(good)
    doc["schema_version"] = 1
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match=r"field 'schema_version' .*\b2\b"):
        load_manifest(path)
    with pytest.raises(ManifestError, match=re.escape(str(tmp_path / "absent.json"))):
        load_manifest(tmp_path / "absent.json")


def test_a_number_too_long_to_read_is_a_manifest_error(tmp_path: Path) -> None:
    """A number of more than 4300 digits makes json.loads raise a plain ValueError (Python's int
    conversion limit), not a JSONDecodeError: it was a traceback from every command, --json too."""
    from click.testing import CliRunner

    from zluda_runner.cli import main_group

    path = tmp_path / "m.json"
    path.write_text('{"schema_version": 2, "manifest_version": ' + "9" * 5000 + "}")
    limit = rf"\({sys.get_int_max_str_digits()} digits\)"  # Python's own reason, passed on
    with pytest.raises(ManifestError, match=limit) as err:
        load_manifest(path)
    assert err.value.hint
    res = CliRunner().invoke(main_group, ["--manifest", str(path), "--json", "releases", "--os", "linux"],
                             catch_exceptions=False)
    assert res.exit_code == 1, res.output
    out = json.loads(res.stdout)
    assert out["kind"] == "manifest" and str(path) in out["error"] and out["hint"]


def test_the_size_cap_is_the_download_cap() -> None:
    from zluda_runner.release.fetch import MAX_DOWNLOAD_BYTES
    from zluda_runner.release.validation import MAX_ASSET_BYTES

    assert MAX_ASSET_BYTES == MAX_DOWNLOAD_BYTES
