"""Selection: the right asset for host + HIP + torch CUDA, and a reason for every other one."""

from __future__ import annotations

import pytest

from zluda_runner.core.errors import ManifestError, SelectionError
from zluda_runner.release.manifest import (
    Manifest,
    load_manifest,
    parse_version,
    version_at_least,
    version_at_most,
)
from zluda_runner.release.selection import Resolution, host_os, select_asset


@pytest.fixture(scope="module")
def manifest() -> Manifest:
    return load_manifest()


def _all_assets(m: Manifest) -> set[tuple[str, str]]:
    return {(r.id, a.name) for r in m.releases for a in r.assets}


def _accounted(m: Manifest, sel) -> set[tuple[str, str]]:  # type: ignore[no-untyped-def]
    seen = {(r.release_id, r.asset_name) for r in sel.rejected}
    if sel.chosen:
        seen.add((sel.chosen.release.id, sel.chosen.asset.name))
    return seen


def test_windows_hip62_cuda11_picks_fork_rocm6(manifest: Manifest) -> None:
    sel = select_asset(manifest, os="windows", hip="6.2", cuda=11)
    assert sel.chosen is not None
    assert sel.chosen.release.flavour == "fork"
    assert sel.chosen.asset.name == "ZLUDA-windows-rocm6-amd64.zip"
    assert _accounted(manifest, sel) == _all_assets(manifest)
    reasons = {(r.release_id, r.asset_name): r.reasons for r in sel.rejected}
    rocm5 = reasons[("fork-3.9.5", "ZLUDA-windows-rocm5-amd64.zip")]
    assert any("5.7" in x and "6.2" in x for x in rocm5)  # what it needs, what there is
    linux = reasons[("fork-3.9.5", "ZLUDA-linux-amd64.tar.gz")]
    assert any("linux" in x and "windows" in x for x in linux)
    # v6 serves CUDA 11 too, but PyTorch on Windows needs the TheRock SDK (docs/src/hip_sdk.md)
    v6 = next(r for r in sel.rejected if r.asset_name == "zluda-windows-3fe1206.zip")
    v6_asset = next(a for a in manifest.find("upstream-v6").assets if a.name == v6.asset_name)
    # it fits, ranked lower: its PyTorch needs more than the HIP SDK (TheRock), the chosen one's does not
    assert v6.fits and v6_asset.hip.torch_needs and not sel.chosen.asset.hip.torch_needs
    assert v6.reasons == ["fits, but fork-3.9.5/ZLUDA-windows-rocm6-amd64.zip is preferred: "
                          "this one needs more than your HIP for PyTorch"]
    nightly = reasons[("fork-3.9.5", "ZLUDA-nightly-windows-rocm6-amd64.zip")]
    assert nightly == ["a nightly build: offered only with --channel preview"]
    preview = select_asset(manifest, os="windows", hip="6.2", cuda=11, channel="preview")
    reasons = {(r.release_id, r.asset_name): r.reasons for r in preview.rejected}
    nightly = reasons[("fork-3.9.5", "ZLUDA-nightly-windows-rocm6-amd64.zip")]
    assert nightly and nightly[0].startswith("fits, but fork-3.9.5/ZLUDA-windows-rocm6-amd64.zip")


def test_windows_hip57_cuda11_picks_fork_rocm5(manifest: Manifest) -> None:
    sel = select_asset(manifest, os="windows", hip="5.7", cuda=11)
    assert sel.chosen is not None
    assert sel.chosen.release.flavour == "fork"
    assert sel.chosen.asset.hip.accepts("5.7") and "rocm5" in sel.chosen.asset.name


def test_linux_hip6x_cuda13_picks_upstream_rewrite(manifest: Manifest) -> None:
    sel = select_asset(manifest, os="linux", hip="6.x", cuda=13)
    assert sel.chosen is not None
    assert sel.chosen.release.flavour == "upstream"
    assert sel.chosen.asset.os == "linux" and 13 in sel.chosen.asset.cuda_majors
    assert int(sel.chosen.release.version) >= 4


def test_windows_cuda12_is_not_the_fork_and_says_why(manifest: Manifest) -> None:
    sel = select_asset(manifest, os="windows", hip="6.2", cuda=12)
    assert sel.chosen is not None and sel.chosen.release.flavour != "fork"
    fork_rocm6 = next(
        r for r in sel.rejected
        if (r.release_id, r.asset_name) == ("fork-3.9.5", "ZLUDA-windows-rocm6-amd64.zip")
    )
    assert any("CUDA 12" in reason for reason in fork_rocm6.reasons)


def test_nothing_fits_gives_none_and_reasons(manifest: Manifest) -> None:
    sel = select_asset(manifest, os="linux", hip="5.0", cuda=12)
    assert sel.chosen is None
    assert _accounted(manifest, sel) == _all_assets(manifest)
    assert all(r.reasons and not r.fits for r in sel.rejected)
    with pytest.raises(SelectionError) as err:
        Resolution(manifest, sel).require()
    assert "upstream-v6" in err.value.message and err.value.hint


def test_release_restriction_and_bad_inputs(manifest: Manifest) -> None:
    sel = select_asset(manifest, os="windows", hip="6.2", cuda=11, release="fork-3.9.2")
    assert sel.chosen is not None and sel.chosen.release.id == "fork-3.9.2"
    others = [r for r in sel.rejected if r.release_id != "fork-3.9.2"]
    assert others and all("'fork-3.9.2'" in r.reasons[0] for r in others)  # the release asked for
    with pytest.raises(ManifestError):
        select_asset(manifest, os="windows", release="nope")
    with pytest.raises(SelectionError, match="'six'"):
        select_asset(manifest, os="windows", hip="six")
    with pytest.raises(SelectionError, match="'macos'"):
        select_asset(manifest, os="macos")


def test_default_os_is_the_host(manifest: Manifest) -> None:
    host = host_os()
    if host is None:
        with pytest.raises(SelectionError):
            select_asset(manifest)
        return
    assert select_asset(manifest).constraints.os == host


def test_version_bounds_compare_at_their_precision() -> None:
    assert parse_version("6.x") == (6,) and parse_version("v6.2.4") == (6, 2, 4)
    assert version_at_most((6, 4), (6,)) and not version_at_most((7, 0), (6,))
    assert version_at_least((6, 10), (6, 4)) and not version_at_least((6, 2), (6, 4))
    assert version_at_least((6,), (6, 2))  # imprecise input is given the benefit of the doubt


def test_manifest_may_be_given_as_path_or_none(manifest: Manifest) -> None:
    from zluda_runner.release.manifest import default_manifest_path

    by_path = select_asset(default_manifest_path(), os="windows", hip="6.2", cuda=11)
    packaged = select_asset(None, os="windows", hip="6.2", cuda=11)
    assert by_path.chosen and packaged.chosen
    assert by_path.chosen.asset.name == packaged.chosen.asset.name == "ZLUDA-windows-rocm6-amd64.zip"


def test_torch_cuda_is_not_served_by_a_release_without_torch_support(manifest: Manifest) -> None:
    # v4's README: no PyTorch in v4: it must not be offered for any torch build
    v4 = manifest.find("upstream-v4")
    assert all(a.cuda_majors == [] for a in v4.assets)
    assert {a.fact("cuda_majors").sources[0].ref for a in v4.assets} == {
        "vosen/ZLUDA:README.md@de870db1f1765665f31a9f94da9b8fbfb7bb5baf"}  # what says so
    sel = select_asset(manifest, os="linux", hip="6.2", cuda=12)
    linux_v4 = next(r for r in sel.rejected if r.asset_name == "zluda-4-linux.tar.gz")
    assert (linux_v4.fits, linux_v4.blocked_by) == (False, "cuda")  # torch's CUDA alone stands in the way
    assert sel.chosen is not None and sel.chosen.release.id == "upstream-v6"


def test_the_candidates_are_every_fitting_asset_best_first_from_the_one_selection(manifest: Manifest) -> None:
    """What ``find`` tries: the choice, then each asset that fits in the order the selection ranked them
    (its "fits, but ... is preferred" rejections); nothing selected again. None fits: no candidate."""
    sel = select_asset(manifest, os="windows", hip="6.2", cuda=11, channel="preview")
    resolution = Resolution(manifest, sel)
    ranked = [(c.release.id, c.asset.name) for c in resolution.candidates]
    assert sel.chosen is not None and ranked[0] == (sel.chosen.release.id, sel.chosen.asset.name)
    assert ranked[1:] == [(r.release_id, r.asset_name) for r in sel.rejected if r.fits]
    assert ("fork-3.9.5", "ZLUDA-nightly-windows-rocm6-amd64.zip") in ranked[1:]
    nothing = Resolution(manifest, select_asset(manifest, os="windows", hip="1.0", cuda=11))
    assert nothing.candidates == []
