"""The GPU x HIP rules judge the HIP each release runs on, whichever release it is (issue 29): the SDK's
or ROCm's for most, the AMD driver's own runtime for upstream v5 on Windows (it links amdhip64_6). The
rules' current sources: gfx1150-gfx1153 need HIP 7.2 on Windows (Speedstu/CUDA-for-AMD-Windows), the
RDNA2 rule is about the Windows HIP SDK only."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from zluda_runner.core.errors import ManifestError
from zluda_runner.core.hipfound import HipFound
from zluda_runner.release.manifest import default_manifest_path, load_manifest
from zluda_runner.release.selection import resolve, select_asset

PROFILES = ("Speedstu/CUDA-for-AMD-Windows:manifests/windows-gpu-profiles.json"
            "@5a7059d34f77c042e8fa3c71d18873c0d6fa76de")
STRIX = ("gfx1150", "gfx1151", "gfx1152", "gfx1153")


def _chosen(**kw: Any) -> str | None:
    chosen = select_asset(None, **kw).chosen
    return chosen.release.id if chosen else None


def _strix_rule() -> Any:
    [rule] = [r for r in load_manifest().gpu_hip_rules if "gfx1150" in r.gfx and r.os == "windows"]
    return rule


def _reasons(release_id: str, **kw: Any) -> list[str]:
    sel = select_asset(None, **kw)
    return [r for rej in sel.rejected if rej.release_id == release_id for r in rej.reasons]


@pytest.mark.parametrize("gfx", STRIX)
def test_strix_on_hip_64_gets_no_release_not_even_the_one_on_the_drivers_hip(gfx: str) -> None:
    assert _chosen(os="windows", hip="6.4", cuda=12) == "upstream-v6"  # without the GPU
    assert _chosen(os="windows", hip="6.4", cuda=12, gfx=gfx) is None  # upstream-v5 was taken
    rule = _strix_rule()
    v5 = _reasons("upstream-v5", os="windows", hip="6.4", cuda=12, gfx=gfx)
    # judged by the driver's HIP 6 it runs on, not the SDK's 6.4; the rule's own reason, with its source
    assert any(r.startswith(f"for your GPU: {rule.reason(gfx, '6')}") for r in v5) and PROFILES in v5[0]
    for preview in ("upstream-v6", "upstream-v7-preview.10", "upstream-v7-preview.11"):
        assert any(r.startswith(f"for your GPU: {rule.reason(gfx, '6.4')}") for r in
                   _reasons(preview, os="windows", hip="6.4", cuda=12, gfx=gfx, channel="preview"))


def test_strix_on_hip_72_runs_what_runs_on_hip_7_and_not_the_drivers_hip_6() -> None:
    assert _chosen(os="windows", hip="7.2", cuda=12, gfx="gfx1151") == "upstream-v6"
    rule = _strix_rule()
    assert any(r.startswith(f"for your GPU: {rule.reason('gfx1151', '6')}")
               for r in _reasons("upstream-v5", os="windows", hip="7.2", cuda=12, gfx="gfx1151"))
    # no HIP SDK found: the driver's runtime is still HIP 6, whatever becomes of the SDK builds
    assert any(r.startswith(f"for your GPU: {rule.reason('gfx1152', '6')}")
               for r in _reasons("upstream-v5", os="windows", cuda=12, gfx="gfx1152"))


def test_the_strix_rule_is_sourced_not_unverified() -> None:
    [rule] = [r for r in load_manifest().gpu_hip_rules if "gfx1150" in r.gfx and r.os == "windows"]
    assert tuple(rule.gfx) == STRIX and rule.min == "7.2" and rule.hip_from is None
    assert rule.source.kind != "unverified"
    refs = [s.ref for s in rule.source.sources]
    assert PROFILES in refs and "https://github.com/Speedstu/CUDA-for-AMD-Windows/issues/3" in refs


def test_the_rdna2_rule_is_about_the_windows_hip_sdk_only() -> None:
    [rule] = [r for r in load_manifest().gpu_hip_rules if "gfx1030" in r.gfx]
    assert rule.hip_from == "hip-sdk" and rule.broken == ["7"]
    assert rule.applies("gfx1031", "windows", "hip-sdk") and rule.applies("gfx1031", "windows", None)
    assert not rule.applies("gfx1031", "windows", "rocm") and not rule.applies("gfx1031", "linux", "rocm")
    refs = [s.ref for s in rule.source.sources]
    assert PROFILES in refs and any(r.startswith("patientx-cfz/comfyui-rocm:detect_gpu.py@") for r in refs)
    sdk = HipFound("7.1", r"HIP SDK 7.1 at C:\Program Files\AMD\ROCm\7.1", origin="hip-sdk")
    # the fork's HIP SDK 7 build is out for RDNA2; upstream v5 runs on the driver's HIP 6, not the SDK's
    assert resolve(load_manifest(), sdk, os="windows", cuda=11, gfx="gfx1031").chosen is None
    on_v5 = resolve(load_manifest(), sdk, os="windows", cuda=12, gfx="gfx1031").require()
    assert on_v5.release_id == "upstream-v5"


def test_driver_hip_belongs_to_a_driver_requirement_only(tmp_path: Path) -> None:
    doc = json.loads(default_manifest_path().read_text())
    bad = copy.deepcopy(doc)
    v6 = next(r for r in bad["releases"] if r["id"] == "upstream-v6")
    v6["assets"][0]["hip"]["driver_hip"] = "6"
    path = tmp_path / "m.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ManifestError) as err:
        load_manifest(path)
    assert "driver_hip" in str(err.value)
    typo = copy.deepcopy(doc)
    v5 = next(r for r in typo["releases"] if r["id"] == "upstream-v5")
    v5["assets"][0]["hip"]["driver_hip"] = "six"
    path.write_text(json.dumps(typo))
    with pytest.raises(ManifestError):
        load_manifest(path)
