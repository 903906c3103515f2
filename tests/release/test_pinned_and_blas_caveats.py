"""The gaps of upstream ZLUDA's driver and cuBLAS, from its own source (vosen/ZLUDA, read at v5 1c0c4210,
v6 3fe12063 and v7-preview.9 8a7931be, the last tag in the snapshot read): ``zluda/src/lib.rs`` lists the
driver functions it implements -- cuMemHostAlloc is there, cuMemAllocHost_v2 and cuMemHostRegister_v2 are
not, so they return NOT_SUPPORTED (``impl::unimplemented``); ``zluda_blas/src/lib.rs`` implements only
GEMM (Sgemm, Hgemm, GemmEx and batched forms): gemv and nrm2 return CUBLAS_STATUS_NOT_SUPPORTED. Each
release the source covers carries both as caveats, each citing the file and commit, and the
compatibility page shows them."""

from __future__ import annotations

import copy
import json

import pytest

from zluda_runner.core.errors import ManifestError
from zluda_runner.release.compat import render_markdown
from zluda_runner.release.manifest import default_manifest_path, load_manifest
from zluda_runner.release.model import PINNED_MEMORY_FUNCTIONS
from zluda_runner.release.validation import parse_manifest

READ_AT = {"upstream-v5": "1c0c4210", "upstream-v6": "3fe12063", "upstream-v7-preview.10": "8a7931be",
           "upstream-v7-preview.11": "8a7931be"}
READ_AT_FULL = {"1c0c4210": "1c0c4210ae7740d51458bd9f59dc100d22bcd35a",
                "3fe12063": "3fe12063f4b864f39376718bb212c6b80a55cab3",
                "8a7931be": "8a7931be87d758835776f54ea2e33d30621c74ce"}


@pytest.mark.parametrize("release_id", sorted(READ_AT))
def test_each_release_read_carries_the_driver_and_cublas_gaps_with_their_source(release_id: str) -> None:
    release = load_manifest().find(release_id)
    driver = [c for c in release.caveats if "cuMemAllocHost" in c]
    blas = [c for c in release.caveats if "gemv" in c]
    assert len(driver) == len(blas) == 1, release.caveats
    assert "cuMemHostRegister" in driver[0] and f"zluda/src/lib.rs@{READ_AT[release_id]}" in driver[0]
    assert "nrm2" in blas[0] and f"zluda_blas/src/lib.rs@{READ_AT[release_id]}" in blas[0]


def test_the_compatibility_page_lists_every_caveat() -> None:
    manifest = load_manifest()
    page = render_markdown(manifest)
    section = page.split("\n## Caveats\n", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ") and line != "| release | caveat |"]
    assert len(rows) == sum(len(r.caveats) for r in manifest.releases)


@pytest.mark.parametrize("release_id", sorted(READ_AT))
def test_each_release_read_records_its_unimplemented_pinned_memory_functions_as_data(release_id: str) -> None:
    """What the defaults follow (``pinned-memory-off``): the functions themselves, with the file and commit
    they were read at; the caveat says the same in words."""
    gaps = load_manifest().find(release_id).unimplemented
    assert gaps is not None and gaps.lacks(PINNED_MEMORY_FUNCTIONS) == ["cuMemAllocHost", "cuMemHostRegister"]
    assert "cuMemHostAlloc" not in gaps.functions  # implemented: torch's cudaHostAlloc path
    assert gaps.source.refs() == f"vosen/ZLUDA:zluda/src/lib.rs@{READ_AT_FULL[READ_AT[release_id]]}"
    assert gaps.source.kind == ("publisher" if release_id in ("upstream-v5", "upstream-v6") else "inferred")


def test_a_release_not_read_records_nothing_unimplemented() -> None:
    manifest = load_manifest()
    assert [r.id for r in manifest.releases if r.unimplemented is not None] == [
        r.id for r in manifest.releases if r.id in READ_AT]


UNVERIFIED = {"kind": "unverified", "sources": [], "note": "not read"}


@pytest.mark.parametrize(("change", "field"), [
    ({"functions": []}, "functions"), ({"functions": ["not a name"]}, "functions"),
    ({"source": UNVERIFIED}, "source"), ({"extra": 1}, "extra")])
def test_a_bad_unimplemented_record_is_refused_naming_its_field(change: dict[str, object],
                                                                field: str) -> None:
    doc = json.loads(default_manifest_path().read_text())
    release = next(r for r in doc["releases"] if r["id"] == "upstream-v6")
    release["unimplemented"] = {**copy.deepcopy(release["unimplemented"]), **change}
    with pytest.raises(ManifestError) as caught:
        parse_manifest(doc, "test")
    said = caught.value.message  # the release, the record and the field are named
    assert f"release 'upstream-v6' unimplemented: field '{field}'" in said, said
