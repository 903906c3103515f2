"""Native ROCm as the alternative to ZLUDA (issue 29, "the world moved"): the manifest's ``native_rocm``
section -- ROCm 10.0.0 with its HIP 7.x and its sources, AMD's torch 2.13.0+rocm10.0.0 wheels per GPU and OS
-- and the one decision (:func:`~zluda_runner.release.native.native_wheels`) ``doctor``, ``releases`` and the
API show. Where no source was found, the data says so (an unverified fact), not a guess."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from zluda_runner.core.errors import ManifestError
from zluda_runner.core.wording import worded_for
from zluda_runner.release.compat import render_markdown
from zluda_runner.release.manifest import Manifest, default_manifest_path, load_manifest
from zluda_runner.release.native import NativeWheels, native_wheels
from zluda_runner.release.validation import parse_manifest

Doc = dict[str, Any]
THEROCK = "ROCm/TheRock:SUPPORTED_GPUS.md@89553ce3746eda74ade42557470d25e37c91b6f0"


@pytest.fixture(scope="module")
def m() -> Manifest:
    return load_manifest()


@pytest.fixture()
def doc() -> Doc:
    return json.loads(default_manifest_path().read_text())


def test_rocm_10_is_hip_7_with_its_sources(m: Manifest) -> None:
    """ROCm 10.0.0 (2026-08-26) numbers its packages 10.x while its HIP is 7.x; 10.2's HIP is 7.17: cited."""
    native = m.native_rocm
    assert native is not None
    assert (native.rocm, native.hip, native.date) == ("10.0.0", "7", "2026-08-26")
    refs = {s.ref: s.kind for s in native.source.sources}
    assert refs["https://github.com/rocm/therock/releases"] == "publisher"  # the release and its date
    assert refs["https://github.com/ROCm/rocm-systems/pull/11712"] == "publisher"  # HIP 7.17 in ROCm 10.2
    assert refs["https://packages.ubuntu.com/ja/tenacious/libamdhip64-dev"] == "third-party usage"  # soname 7
    assert native.source.kind == "publisher" and native.source.note  # the release notes page: not read, said
    assert (native.torch, native.index_url) == ("2.13.0+rocm10.0.0", "https://stable.repo.amd.com/rocm/whl-next/")
    readme = f"ROCm/TheRock:external-builds/pytorch/README.md@{THEROCK.rsplit('@')[1]}"
    assert readme in {s.ref for s in native.torch_source.sources}  # torch 2.13 on Linux and Windows
    # lshqqytiger/ZLUDA#140 is not among the stored sources: the recommendation cites what was found, and
    # its note says #140 was not
    assert native.recommended is not None and native.recommended.kind == "maintainer statement"
    assert "#140" in native.recommended.note


@pytest.mark.parametrize(("gfx", "os", "available", "support"), [
    ("gfx1100", "windows", True, "release-ready"),  # RX 7900: TheRock's Windows table, release-ready
    ("gfx1151", "windows", True, "release-ready"),
    ("gfx1031", "windows", True, "release-ready"),  # RDNA2 on Windows: TheRock, not the HIP SDK
    ("gfx1201", "windows", True, "built"),  # built and published, not sanity-tested on Windows
    ("gfx1201", "linux", True, "release-ready"),
    ("gfx942", "linux", True, "release-ready"),
    ("gfx1153", "linux", True, "built"),
    ("gfx942", "windows", None, ""),  # no source names a Windows wheel for Instinct
    ("gfx90c", "linux", None, ""),  # built, but no torch extra
    ("gfx803", "windows", None, ""),  # Polaris: no source at all
    ("gfx1036", "linux", True, "release-ready"),
])
def test_the_decision_per_gpu_and_os(m: Manifest, gfx: str, os: str, available: bool | None,
                                     support: str) -> None:
    got = native_wheels(m, gfx, os)
    assert got is not None
    assert (got.gfx, got.os, got.available, got.support) == (gfx, os, available, support)
    if available:
        assert got.source.kind == "publisher" and got.source.sources[0].ref == THEROCK
        assert got.install.split() == ["pip", "install", "--index-url", "https://stable.repo.amd.com/rocm/whl-next/",
                                       f'"torch[device-{gfx}]==2.13.0+rocm10.0.0"']
        assert got.line() is not None
    else:
        assert got.source.kind == "unverified" and got.source.note and not got.source.sources
        assert got.line() is None  # nothing said where the data does not say wheels exist


def test_a_gpu_no_entry_names_is_not_known_and_says_so(m: Manifest) -> None:
    got = native_wheels(m, "gfx1250", "windows")
    assert got is not None and got.available is None and got.source.kind == "unverified" and got.source.note
    assert native_wheels(m, None, "windows") is None  # no GPU known: no answer
    assert native_wheels(m, "gfx1100", "macos") is None


def test_json_fields_of_the_answer(m: Manifest) -> None:
    """The typed answer's JSON: the facts, the install line, the rendered compare command and the line."""
    yes = native_wheels(m, "gfx1100", "linux")
    no = native_wheels(m, "gfx803", "linux")
    assert yes is not None and no is not None
    plain = yes.to_dict()
    with worded_for("command line"):  # the command line's words: the ab command with the native python as B
        assert yes.to_dict()["compare"].strip("`").split() == ["zluda-run", "ab", "--b-python", "PY", "--",
                                                                "SCRIPT"]
    assert plain["compare"] == "zluda_runner.run_ab()"  # a Python caller's: the API call
    assert {"gfx", "os", "available", "support", "rocm", "hip", "torch", "index_url", "install", "source",
            "torch_source", "compare", "line"} <= set(plain)
    assert plain["line"] and plain["compare"]
    assert (no.to_dict()["line"], no.to_dict()["compare"], no.to_dict()["available"]) == (None, None, None)
    again = NativeWheels.from_dict(json.loads(json.dumps(plain)))
    assert again == yes


def _wheels(doc: Doc, index: int) -> Doc:
    entry: Doc = doc["native_rocm"]["wheels"][index]
    return entry


BAD: list[tuple[Callable[[Doc], None], str]] = [
    (lambda d: d["native_rocm"].update(torch="2.13.0+rocm7.2.0"), "torch"),  # not built for this ROCm
    (lambda d: d["native_rocm"].update(index_url="http://stable.repo.amd.com/rocm/whl-next/"), "index_url"),
    (lambda d: d["native_rocm"].update(hip="seven"), "hip"),
    (lambda d: d["native_rocm"].update(date="26 Aug 2026"), "date"),
    (lambda d: d["native_rocm"].update(source={"kind": "unverified", "note": "a docstring"}), "source"),
    (lambda d: d["native_rocm"].update(wheel=[]), "wheel"),  # a typo
    (lambda d: d["native_rocm"].update(wheels=[]), "wheels"),
    (lambda d: _wheels(d, 0).update(available="yes"), "available"),
    # a guess: published, with nothing to say so
    (lambda d: _wheels(d, 0).update(source={"kind": "unverified", "note": "probably"}), "available"),
    # a fact with sources where none was found
    (lambda d: _wheels(d, 6).update(source=_wheels(d, 0)["source"]), "source"),
    (lambda d: _wheels(d, 0).update(support="stable"), "support"),
    (lambda d: _wheels(d, 0).pop("support"), "support"),
    (lambda d: _wheels(d, 6).update(support="built"), "support"),
    (lambda d: _wheels(d, 0).update(gfx=["rx7900"]), "gfx"),
    (lambda d: _wheels(d, 0).update(os="macos"), "os"),
    (lambda d: _wheels(d, 1)["gfx"].append("gfx1100"), "gfx"),  # gfx1100 on Windows answered twice
    (lambda d: _wheels(d, 6).update(os=None, gfx=["gfx1100"]), "gfx"),  # any OS overlaps an entry
]


@pytest.mark.parametrize(("change", "field"), BAD, ids=[f"{i}-{f}" for i, (_, f) in enumerate(BAD)])
def test_a_wrong_field_is_rejected_by_its_name(doc: Doc, change: Callable[[Doc], None], field: str) -> None:
    bad = copy.deepcopy(doc)
    change(bad)
    with pytest.raises(ManifestError) as caught:
        parse_manifest(bad, "test.json")
    assert f"field '{field}'" in caught.value.message and caught.value.hint


def test_the_section_is_optional_and_round_trips(doc: Doc) -> None:
    del doc["native_rocm"]
    assert parse_manifest(doc, "test.json").native_rocm is None
    m = load_manifest()
    assert m.native_rocm is not None
    again = type(m.native_rocm).from_dict(json.loads(json.dumps(m.native_rocm.to_dict())))
    assert again == m.native_rocm


def test_the_compatibility_page_cites_every_source(m: Manifest) -> None:
    page = render_markdown(m)
    assert m.native_rocm is not None
    section = page.split("## Native ROCm", 1)[1].split("\n## ", 1)[0]
    for fact in (m.native_rocm.source, m.native_rocm.torch_source):
        for source in fact.sources:  # every source of the ROCm 10 and the wheel facts, not the first three
            assert source.ref in section
    for entry in m.native_rocm.wheels:
        assert ", ".join(entry.gfx) in section
        if entry.source.note:
            assert entry.source.note in section
