"""Each fact issue 13 found contradicted is now what its source says, with that source attached."""

from __future__ import annotations

import pytest

from zluda_runner.release.manifest import Manifest, load_manifest
from zluda_runner.release.model import ASSET_FACTS, RELEASE_FACTS, RELEASE_OPTIONAL_FACTS


@pytest.fixture(scope="module")
def m() -> Manifest:
    return load_manifest()


def _refs(fact) -> str:  # type: ignore[no-untyped-def]
    return " ".join(s.ref for s in fact.sources)


def test_every_decision_fact_has_provenance(m: Manifest) -> None:
    for rel in m.releases:
        assert set(RELEASE_FACTS) <= set(rel.provenance) <= {*RELEASE_FACTS, *RELEASE_OPTIONAL_FACTS}
        assert ("commit" in rel.provenance) == (rel.commit is not None), rel.id
        for asset in rel.assets:
            assert set(asset.provenance) == set(ASSET_FACTS), (rel.id, asset.name)
            for fact in asset.provenance.values():
                assert fact.sources or (fact.kind == "unverified" and fact.note)
            if not asset.hash_known:
                assert asset.fact("sha256").kind == "unverified"


def test_fork_396_generic_needs_hip7_per_maintainer(m: Manifest) -> None:
    gen = m.find("fork-3.9.6").asset("ZLUDA-windows-amd64.zip")
    assert (gen.hip.min, gen.hip.max) == ("7.1", "7")
    assert gen.hip.accepts("7.1") and not gen.hip.accepts("6.4")
    fact = gen.fact("hip")
    assert fact.kind == "maintainer statement"
    assert "lshqqytiger/ZLUDA/issues/134" in _refs(fact) and "lshqqytiger/ZLUDA/issues/137" in _refs(fact)
    assert "amdhip64_7.dll" in gen.hip.label
    assert m.find("fork-3.9.6").date == "2026-02"


def test_fork_395_rocm6_works_with_62_and_642(m: Manifest) -> None:
    r6 = m.find("fork-3.9.5").asset("ZLUDA-windows-rocm6-amd64.zip")
    assert r6.hip.accepts("6.2") and r6.hip.accepts("6.4") and not r6.hip.accepts("7.1")
    kinds = {s.kind for s in r6.fact("hip").sources}
    assert {"publisher", "maintainer statement"} <= kinds
    assert "issues/137" in _refs(r6.fact("hip"))
    assert m.find("fork-3.9.5").date == "2025-05-13"


def test_fork_392_built_with_hip_62(m: Manifest) -> None:
    rel = m.find("fork-3.9.2")
    r6 = rel.asset("ZLUDA-windows-rocm6-amd64.zip")
    assert r6.hip.min == "6.2" and not r6.hip.accepts("6.1")
    assert "rust.yml@dba64c0966df2c71e82255e942c96e2e1cea3a2d" in _refs(r6.fact("hip"))
    assert rel.date == "2025-03-26"
    assert "cudart.dll" in r6.other_files


def test_fork_releases_are_prereleases_from_ci(m: Manifest) -> None:
    for rel in m.releases:
        if rel.flavour == "fork":
            assert rel.prerelease, rel.id
            assert "rust.yml" in _refs(rel.fact("prerelease"))


def test_fork_gpu_generations_include_gcn_via_rocm5(m: Manifest) -> None:
    gens = " ".join(m.find("fork-3.9.5").gpu_generations)
    assert all(w in gens.split() for w in ("Polaris", "(gfx803)", "Vega", "(gfx900)", "2.2.1"))
    assert "fixforrx580.bat" in _refs(m.find("fork-3.9.5").fact("gpu_generations"))
    gcn = next(r for r in m.gpu_hip_rules if "gfx803" in r.gfx)
    assert gcn.max == "5.7" and not gcn.accepts("6.2")


def test_fork_linux_tarball_layout_and_pytorch_caveat(m: Manifest) -> None:
    lin = m.find("fork-3.9.5").asset("ZLUDA-linux-amd64.tar.gz")
    assert lin.archive_root == "zluda"
    paths = {f.path for f in lin.files}
    wanted = {"libcublasLt.so.11", "libcudnn.so.9", "libnccl.so.2", "libnvrtc.so.11", "libcufftw.so.10"}
    assert wanted <= paths
    assert {launcher.path for launcher in lin.launchers} == {"dump", "dump_nvidia"}
    assert lin.hip.accepts("6.2") and not lin.hip.accepts("5.7")
    assert any("#473" in c and "Linux" in c for c in m.find("fork-3.9.5").caveats)


def test_upstream_v6_windows_needs_the_hip_sdk_and_therock_for_torch(m: Manifest) -> None:
    win = m.find("upstream-v6").asset("zluda-windows-3fe1206.zip")
    assert win.hip.kind == "sdk" and (win.hip.min, win.hip.max) == ("6", "7")
    assert "TheRock" in win.hip.torch_needs
    refs = _refs(win.fact("hip"))
    assert "docs/src/quick_start.md@3fe1206" in refs and "docs/src/hip_sdk.md@3fe1206" in refs


def test_upstream_v6_linux_rocm_6_or_7_with_rocsparse(m: Manifest) -> None:
    lin = m.find("upstream-v6").asset("zluda-linux-3fe12063.tar.gz")
    assert lin.hip.accepts("6.2") and lin.hip.accepts("7.1") and not lin.hip.accepts("5.2")
    assert "rocsparse" in lin.hip.label
    assert "xtask/src/main.rs@3fe1206" in _refs(lin.fact("hip"))
    assert lin.cuda_majors == [11, 12, 13]


def test_upstream_v6_file_lists(m: Manifest) -> None:
    rel = m.find("upstream-v6")
    lin = rel.asset("zluda-linux-3fe12063.tar.gz")
    names = {n for f in lin.files for n in f.load_names}
    assert {"libcublasLt.so", "libcublasLt.so.11", "libcublasLt.so.12", "libcublasLt.so.13",
            "libcublas.so.11", "libcufft.so.10", "libcusparse.so.10", "libcusparse.so.11",
            "libcudnn.so.8"} <= names
    assert {"ptxas", "zluda_precompile"} <= set(lin.other_files)
    win = rel.asset("zluda-windows-3fe1206.zip")
    wnames = {f.path for f in win.files}
    wanted = {"cublas64_11.dll", "cublasLt64_11.dll", "cufft64_10.dll", "cusparse64_11.dll", "cudnn64_8.dll"}
    assert wanted <= wnames
    assert {"ptxas.exe", "zluda_precompile.exe"} <= set(win.other_files)


def test_upstream_v6_cufft_is_flagged_as_stub_for_the_planner(m: Manifest) -> None:
    for asset in m.find("upstream-v6").assets:
        ffts = asset.files_for("cufft")
        assert ffts and all(f.stub for f in ffts)
        for f in ffts:
            assert "CUFFT_NOT_SUPPORTED" in f.stub_reason and f.stub_source is not None  # what calls return
            assert f.stub_source.ref.startswith("vosen/ZLUDA:zluda_fft/src/lib.rs@")
        assert not any(f.stub for f in asset.files if f.family != "cufft")


def test_upstream_v4_has_no_zluda_ld_and_is_not_driver_only(m: Manifest) -> None:
    rel = m.find("upstream-v4")
    for asset in rel.assets:
        assert "zluda_ld" not in {launcher.name for launcher in asset.launchers}
        assert not any(launcher.path.startswith("trace") for launcher in asset.launchers)
    assert "libzluda_dump.so" in rel.asset("zluda-4-linux.tar.gz").other_files
    win = rel.asset("zluda-4-windows.zip")
    assert win.hip.kind == "sdk" and "README.md@de870db" in _refs(win.fact("hip"))
    assert rel.date == "2024-12-20"


def test_upstream_v3_windows_is_driver_only_and_has_no_dump_nvidia(m: Manifest) -> None:
    rel = m.find("upstream-v3")
    assert rel.asset("zluda-3-windows.zip").hip.kind == "driver"
    lin = rel.asset("zluda-3-linux.tar.gz")
    assert {launcher.path for launcher in lin.launchers} == {"dump"}
    paths = {f.path for f in lin.files}
    assert {"libcudnn.so.7", "libcudnn.so.8", "libcublas.so.10", "libcublas.so.11"} <= paths


def test_hash_pins_are_counted_and_attributed(m: Manifest) -> None:
    v6 = m.find("upstream-v6")
    win = v6.asset("zluda-windows-3fe1206.zip").fact("sha256")
    assert win.kind == "third-party pin" and win.independent == 3
    assert "lacucaracha421/lakoTrans" in _refs(win) and "koharu" not in _refs(win).lower().replace(
        "koharuzludamanifest", "")
    lin = v6.asset("zluda-linux-3fe12063.tar.gz").fact("sha256")
    assert lin.independent == 1 and "deeplearning4j" in _refs(lin)
    v4 = m.find("upstream-v4").asset("zluda-4-linux.tar.gz").fact("sha256")
    assert v4.independent == 1
    for rel in m.releases:
        if rel.flavour == "fork":
            assert all(not a.hash_known for a in rel.assets)


def test_v7_preview_is_only_in_the_preview_channel(m: Manifest) -> None:
    v7 = m.find("upstream-v7-preview.10")
    assert v7.prerelease and all(a.channel == "preview" for a in v7.assets)
