"""The manifest's GPU x HIP rules change release selection (issue 22): the same host facts with and
without the GPU, the rule's words as the reason, its fix in the "nothing fits" hint."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.core.hipfound import HipFound
from zluda_runner.release.manifest import load_manifest
from zluda_runner.release.selection import NothingFitsError, Resolution, resolve, select_asset


def _pick(**kw: object) -> tuple[str, str] | None:
    chosen = select_asset(None, **kw).chosen  # type: ignore[arg-type]
    return (chosen.release.id, chosen.asset.name) if chosen else None


def test_rdna2_on_windows_hip_7_gets_nothing_and_the_fix() -> None:
    assert _pick(os="windows", hip="7.1", cuda=11) == ("fork-3.9.6", "ZLUDA-windows-amd64.zip")
    sel = select_asset(None, os="windows", hip="7.1", cuda=11, gfx="gfx1031")
    assert sel.chosen is None
    (rule,) = sel.gpu_rules  # RDNA2 with HIP SDK 7 on Windows, and its source
    assert (rule.os, rule.broken, "gfx1031" in rule.gfx) == ("windows", ["7"], True)
    assert [s.ref for s in rule.source.sources] == [  # the report, and the sources that scope it to the SDK
        "https://github.com/patientx/ComfyUI-Zluda/issues/438",
        "Speedstu/CUDA-for-AMD-Windows:manifests/windows-gpu-profiles.json@5a7059d34f77c042e8fa3c71d18873c0d6fa76de",
        "patientx-cfz/comfyui-rocm:detect_gpu.py@5e4fb740e37f73b783998a463cea217ccf684b6e"]
    fork = next(r for r in sel.rejected if r.asset_name == "ZLUDA-windows-amd64.zip")
    assert fork.reasons == [f"for your GPU: {rule.reason('gfx1031', '7.1')}"]  # the rule's words, cited
    with pytest.raises(NothingFitsError) as err:
        Resolution(load_manifest(), sel).require()
    assert rule.reason("gfx1031", "7.1") in err.value.message
    assert (err.value.hint or "").splitlines()[0] == f"for gfx1031: {rule.fix}"  # HIP SDK 6.2.4 or 6.4.2
    # the same GPU on HIP SDK 6.4: the rule holds and the choice is what it is without the GPU
    assert _pick(os="windows", hip="6.4", cuda=11, gfx="gfx1031") == _pick(os="windows", hip="6.4", cuda=11)


def test_rdna4_on_windows_needs_hip_64() -> None:
    assert _pick(os="windows", hip="6.2", cuda=11) == ("fork-3.9.5", "ZLUDA-windows-rocm6-amd64.zip")
    assert _pick(os="windows", hip="6.2", cuda=11, gfx="gfx1201") is None
    assert _pick(os="windows", hip="6.4", cuda=11, gfx="gfx1201") is not None
    # HIP not known: the builds for HIP SDK 5.7 are out for RDNA4, in the rule's words
    sel = select_asset(None, os="windows", cuda=11, gfx="gfx1200")
    rocm5 = [r for r in sel.rejected if "rocm5" in r.asset_name]
    rdna4 = next(r for r in load_manifest().gpu_hip_rules if r.os == "windows" and "gfx1200" in r.gfx)
    assert rdna4.min == "6.4" and not sel.gpu_rules  # no HIP to judge the rule by ...
    for rejected in rocm5:  # ... but an asset that needs HIP SDK 5.7 cannot meet it: out, in the rule's words
        release = load_manifest().find(rejected.release_id)
        asset = next(a for a in release.assets if a.name == rejected.asset_name)
        assert asset.hip.max == "5.7" and len(rejected.reasons) == 1
        assert rdna4.label in rejected.reasons[0] and asset.hip.describe() in rejected.reasons[0]
    assert len(rocm5) == 3
    plain = select_asset(None, os="windows", cuda=11)
    assert not [r for r in plain.rejected if "rocm5" in r.asset_name and not r.fits]


def test_gfx1150_on_windows_needs_hip_72() -> None:
    assert _pick(os="windows", hip="7.1", cuda=11, gfx="gfx1150") is None
    assert _pick(os="windows", hip="7.1", cuda=11) is not None
    assert _pick(os="windows", hip="7.2", cuda=11, gfx="gfx1150") == ("fork-3.9.6", "ZLUDA-windows-amd64.zip")


def test_debians_rocm_64_is_refused_for_rdna4_through_the_hosts_hip_origin() -> None:
    debian = HipFound("6.4", "HIP 6.4 from Debian's libamdhip64-6 package", origin="distribution")
    amd = HipFound("6.4", "ROCm 6.4.1 at /opt/rocm", origin="rocm")
    with pytest.raises(NothingFitsError) as err:
        resolve(load_manifest(), debian, os="linux", cuda=13, gfx="gfx1201").require()
    assert err.value.selection is not None
    (rule,) = err.value.selection.gpu_rules  # the rule for HIP from a distribution's packages
    assert (rule.os, rule.hip_from, rule.broken) == ("linux", "distribution", ["6.4"])
    assert rule.reason("gfx1201", "6.4") in err.value.message
    assert (err.value.hint or "").splitlines()[0] == f"for gfx1201: {rule.fix}"  # install AMD's ROCm
    def pick(found: HipFound, gfx: str | None = None) -> str:
        return resolve(load_manifest(), found, os="linux", cuda=13, gfx=gfx).require().release_id

    assert pick(amd, "gfx1201") == pick(debian, "gfx1100") == "upstream-v6"
    assert pick(debian) == "upstream-v6"  # no GPU named: no rule


def test_releases_cli_rejects_with_the_rules_words() -> None:
    res = CliRunner().invoke(main_group, ["--json", "releases", "--os", "windows", "--hip", "7.1", "--cuda",
                                          "11", "--gpu", "gfx1031"])
    assert res.exit_code == 3, res.output
    data = json.loads(res.output)
    assert data["selected"] is None
    assert any("RDNA2" in w for w in data["warnings"])
