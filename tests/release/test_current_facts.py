"""The facts issue 22 brought into the manifest, each with the source it rests on."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from zluda_runner.core.errors import ManifestError
from zluda_runner.release.compat import render_markdown
from zluda_runner.release.manifest import Manifest, default_manifest_path, load_manifest
from zluda_runner.release.validation import parse_manifest


@pytest.fixture(scope="module")
def m() -> Manifest:
    return load_manifest()


def test_v7_preview_10_date_commit_and_windows_pin(m: Manifest) -> None:
    rel = m.find("upstream-v7-preview.10")
    assert (rel.date, rel.commit) == ("2026-08-26", "9c8b43f242985150f86a7f485218b7b82c3e96ca")
    assert rel.fact("commit").sources and rel.fact("date").sources
    win = rel.asset("zluda-windows-9c8b43f.zip")
    assert win.sha256 == "a80cfa84217773a1ca0f6b7eb2ee1de9de8cfd654adcab052b1978b031ccb74b"
    sha = win.fact("sha256")
    assert sha.kind == "third-party pin" and sha.independent == 1 and sha.weak  # one third party: said so
    assert "Speedstu/CUDA-for-AMD-Windows:manifests/zluda-releases.json@9aec666a" in sha.refs()
    assert win.channel == "preview" and win.os == "windows"
    assert {"nvapi64.dll", "trace/nvapi64.dll", "zluda64_server.exe", "32/nvcuda.dll"} <= set(win.other_files)
    assert not [f for f in win.files if f.path.startswith("32/")]  # nothing stands in from the 32-bit folder


def test_v7_preview_11_known_and_unknown(m: Manifest) -> None:
    rel = m.find("upstream-v7-preview.11")
    assert rel.commit == "ee2f25a180099fa42f36b2346732e1f2470a03ad" and rel.date == "2026-09-22"
    win = rel.asset("zluda-windows-ee2f25a.zip")
    assert win.sha256 == "7788c1ed43385e62f0cc5f4d1aead24c92b671c02f1d685f63182540dea16d74"
    assert win.fact("sha256").kind == "third-party pin"
    assert rel.assets_for("linux") == []  # the Linux name and hash are not known: not invented
    assert [a.os for a in rel.assets] == ["windows"]


FFTW = "lshqqytiger/ZLUDA:zluda_fftw/src/cufftw.rs@5e71745"


@pytest.mark.parametrize(("rid", "path", "words", "ref"), [
    ("fork-3.9.5", "libnccl.so.2", "ncclInternalError", "lshqqytiger/ZLUDA:zluda_ccl/src/nccl.rs@5e71745"),
    ("fork-3.9.5", "libcufftw.so.10", "aborts the process", FFTW),
    ("fork-3.9.5", "cufftw.dll", "aborts the process", FFTW),
    ("upstream-v3", "libnccl.so.2", "ncclInternalError", "vosen/ZLUDA:zluda_ccl/src/nccl.rs@1b9ba2b"),
])
def test_the_forks_nccl_and_cufftw_are_stubs_with_their_source(m: Manifest, rid: str, path: str, words: str,
                                                               ref: str) -> None:
    files = [f for a in m.find(rid).assets for f in a.files if f.path == path]
    assert files
    for f in files:
        assert f.stub and words in f.stub_reason and f.stub_source is not None
        assert f.stub_source.ref.startswith(ref) and f.stub_source.kind == "publisher"
    stubs = [f for a in m.find(rid).assets for f in a.files if f.stub]  # each read from the code
    assert {f.path for f in stubs} <= {"libnccl.so.2", "libcufftw.so.10", "cufftw.dll"}
    assert all(f.stub_source is not None and f.stub_source.kind == "publisher" for f in stubs)


def test_fork_nightly_cudnn_needs_hip_62_and_breaks_on_64(m: Manifest) -> None:
    nightly = m.find("fork-3.9.5").asset("ZLUDA-nightly-windows-rocm6-amd64.zip")
    cudnn = nightly.files_for("cudnn")[0]
    assert cudnn.hip_broken == ["6.4"] and cudnn.broken_on("6.4.2") and not cudnn.broken_on("6.2")
    source = cudnn.hip_broken_source
    assert source is not None and source.ref.endswith("lshqqytiger/ZLUDA/issues/125")
    refs = nightly.fact("files").refs(limit=20)
    assert "lshqqytiger/ZLUDA/issues/116" in refs and "lshqqytiger/ZLUDA/issues/125" in refs


def test_v6_cudnn9_and_cusparse12_serve_cuda_12_and_13(m: Manifest) -> None:
    for asset in m.find("upstream-v6").assets:
        for name in ("libcudnn.so.9", "libcusparse.so.12", "cudnn64_9.dll", "cusparse64_12.dll"):
            for f in (f for f in asset.files if f.path == name):
                assert f.serves(12) and f.serves(13) and not f.serves(11), (asset.name, name)


def test_the_compile_cache_file_of_v6_is_zluda2_db(m: Manifest) -> None:
    assert any("zluda2.db" in c for c in m.find("upstream-v6").caveats)


def test_a_file_cuda_majors_must_include_its_cuda_major() -> None:
    doc: dict[str, Any] = json.loads(default_manifest_path().read_text())
    bad = copy.deepcopy(doc)
    v6 = next(r for r in bad["releases"] if r["id"] == "upstream-v6")
    f = next(f for f in v6["assets"][0]["files"] if f["path"] == "libcudnn.so.9")
    f["cuda_majors"] = [13]
    with pytest.raises(ManifestError, match=r"'cuda_majors'.*\b12\b"):
        parse_manifest(bad, "t.json")


def test_gpu_rules_are_sourced_and_validated(m: Manifest) -> None:
    labels = {r.label: r for r in m.gpu_hip_rules}
    rdna2 = next(r for r in m.gpu_hip_rules if "gfx1031" in r.gfx)
    assert rdna2.os == "windows" and not rdna2.accepts("7.1") and rdna2.accepts("6.4")
    assert "patientx/ComfyUI-Zluda/issues/438" in rdna2.source.refs() and rdna2.fix
    debian = next(r for r in labels.values() if r.hip_from == "distribution")
    assert not debian.accepts("6.4") and debian.accepts("7.0")
    doc: dict[str, Any] = json.loads(default_manifest_path().read_text())
    doc["gpu_hip_rules"][0]["hip_from"] = "debian"
    with pytest.raises(ManifestError, match=r"'hip_from'.*rocm, hip-sdk, distribution"):
        parse_manifest(doc, "t.json")
    doc["gpu_hip_rules"][0].pop("hip_from")
    doc["gpu_hip_rules"][0]["broken"] = ["seven"]
    with pytest.raises(ManifestError, match="'broken'"):
        parse_manifest(doc, "t.json")


def test_the_compatibility_page_shows_the_new_data(m: Manifest) -> None:
    page = render_markdown(m)
    for text in ("zluda-windows-ee2f25a.zip", "## GPU generations and HIP", "a HIP other than 7.x",
                 "patientx/ComfyUI-Zluda/issues/438", "## Stubs (stand in by name only)", "`libnccl.so.2`",
                 "compute capability 8.5 (override: ZLUDA_CC=MAJOR.MINOR)",
                 "9c8b43f242985150f86a7f485218b7b82c3e96ca"):
        assert text in page, text
    docs = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
    assert docs.read_text(encoding="utf-8") == page


def test_the_nightly_cudnn_breakage_on_hip_64_is_a_note_where_it_is_chosen() -> None:
    doc: dict[str, Any] = json.loads(default_manifest_path().read_text())
    fork = next(r for r in doc["releases"] if r["id"] == "fork-3.9.5")
    fork["assets"] = [a for a in fork["assets"] if a["name"] == "ZLUDA-nightly-windows-rocm6-amd64.zip"]
    only_nightly = parse_manifest(doc, "t.json")
    from zluda_runner.release.selection import select_asset

    on_64 = select_asset(only_nightly, os="windows", hip="6.4", cuda=11, channel="preview",
                         release="fork-3.9.5").chosen
    assert on_64 is not None
    note = next(n for n in on_64.notes if "cudnn" in n)
    assert "6.4" in note and "lshqqytiger/ZLUDA/issues/125" in note  # the HIP it breaks on, the source
    on_62 = select_asset(only_nightly, os="windows", hip="6.2", cuda=11, channel="preview",
                         release="fork-3.9.5").chosen
    assert on_62 is not None and not [n for n in on_62.notes if "issues/125" in n]
    bad = copy.deepcopy(doc)
    nightly = next(r for r in bad["releases"] if r["id"] == "fork-3.9.5")["assets"][0]
    next(f for f in nightly["files"] if f["family"] == "cudnn").pop("hip_broken_source")
    with pytest.raises(ManifestError, match="field 'hip_broken_source' is missing"):
        parse_manifest(bad, "t.json")
