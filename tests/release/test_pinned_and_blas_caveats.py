"""The gaps of upstream ZLUDA's driver and cuBLAS, from its own source (vosen/ZLUDA, read at v5 1c0c4210,
v6 3fe12063 and v7-preview.9 8a7931be, the last tag in the snapshot read): ``zluda/src/lib.rs`` lists the
driver functions it implements -- cuMemHostAlloc is there, cuMemAllocHost_v2 and cuMemHostRegister_v2 are
not, so they return NOT_SUPPORTED (``impl::unimplemented``); ``zluda_blas/src/lib.rs`` implements only
GEMM (Sgemm, Hgemm, GemmEx and batched forms): gemv and nrm2 return CUBLAS_STATUS_NOT_SUPPORTED. Each
release the source covers carries both as caveats, each citing the file and commit, and the
compatibility page shows them."""

from __future__ import annotations

import pytest

from zluda_runner.release.compat import render_markdown
from zluda_runner.release.manifest import load_manifest

READ_AT = {"upstream-v5": "1c0c4210", "upstream-v6": "3fe12063", "upstream-v7-preview.10": "8a7931be",
           "upstream-v7-preview.11": "8a7931be"}


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
