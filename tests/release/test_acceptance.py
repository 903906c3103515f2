"""Issue 13 acceptance: selection matches what works, says why, and agrees with the host's HIP."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.core.errors import SelectionError
from zluda_runner.host.hipversion import find_host_hip, host_hip_version
from zluda_runner.release.manifest import load_manifest
from zluda_runner.release.selection import Resolution, parse_cuda, select_asset


def _run(*args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main_group, list(args), env=env)


def test_windows_hip64_cu118_selects_395_rocm6_and_names_134_137() -> None:
    res = _run("releases", "--os", "windows", "--hip", "6.4", "--cuda", "11")
    assert res.exit_code == 0, res.output
    assert "selected: fork-3.9.5" in res.output and "asset:  ZLUDA-windows-rocm6-amd64.zip" in res.output
    line = next(x for x in res.output.splitlines() if x.startswith("  fork-3.9.6/ZLUDA-windows-amd64.zip"))
    assert "7.1 to 7.x" in line and "6.4" in line  # what it needs, what there is
    assert "lshqqytiger/ZLUDA/issues/134" in line and "lshqqytiger/ZLUDA/issues/137" in line
    assert "source: hip: publisher" in res.output  # the chosen asset's provenance is shown


def test_cuda_given_as_torch_tag_and_json() -> None:
    res = _run("releases", "--os", "windows", "--hip", "6.4", "--cuda", "cu118", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["selected"]["release"] == "fork-3.9.5"
    assert data["selected"]["asset"]["name"] == "ZLUDA-windows-rocm6-amd64.zip"
    assert data["selected"]["evidence"]["hip"] == "publisher"
    assert data["selected"]["asset"]["provenance"]["hip"]["sources"]
    assert data["manifest"]["updated"] and data["manifest"]["published_by"]
    assert parse_cuda("12.8") == 12 and parse_cuda("cu130") == 13 and parse_cuda("11") == 11
    with pytest.raises(SelectionError):
        parse_cuda("eleven")


def test_hip71_selects_396_generic_and_hip57_the_rocm5_zips() -> None:
    m = load_manifest()
    sel = select_asset(m, os="windows", hip="7.1", cuda=11)
    assert sel.chosen is not None
    assert (sel.chosen.release.id, sel.chosen.asset.name) == ("fork-3.9.6", "ZLUDA-windows-amd64.zip")
    # its name is known from installer scripts only: the choice says so
    name = sel.chosen.asset.fact("name")
    assert name.weak and sel.chosen.evidence()["name"] == "third-party usage"
    assert sum(name.refs(2) in n for n in sel.chosen.notes) == 1  # one note names the weak source
    sel = select_asset(m, os="windows", hip="5.7", cuda=11)
    assert sel.chosen and "rocm5" in sel.chosen.asset.name
    fitting = {r.asset_name for r in sel.rejected if r.fits} | {sel.chosen.asset.name}
    assert fitting == {"ZLUDA-windows-rocm5-amd64.zip", "ZLUDA-windows-amd64.zip"}  # rocm5 zips + 11cc584


def test_preview_builds_only_with_channel_preview() -> None:
    m = load_manifest()
    stable = select_asset(m, os="linux", hip="6.4", cuda=13)
    assert stable.chosen and stable.chosen.release.id == "upstream-v6"
    v7 = next(r for r in stable.rejected if r.release_id == "upstream-v7-preview.10")
    assert v7.reasons == ["a preview build: offered only with --channel preview"]
    preview = select_asset(
        m, os="linux", hip="6.4", cuda=13, release="upstream-v7-preview.10", channel="preview"
    )
    assert preview.chosen and preview.chosen.release.id == "upstream-v7-preview.10"


def test_requested_release_that_does_not_fit_says_why_first() -> None:
    res = _run("releases", "--os", "windows", "--hip", "6.4", "--cuda", "11", "--release", "fork-3.9.6")
    assert res.exit_code == 3, res.output
    lines = res.output.splitlines()
    assert lines[1] == "requested release fork-3.9.6 does not fit:"
    assert "issues/134" in lines[2]
    assert any("--release" in x and "fork-3.9.5/ZLUDA-windows-rocm6-amd64.zip" in x for x in lines)
    sel = select_asset(load_manifest(), os="windows", hip="6.4", cuda=11, release="fork-3.9.6")
    with pytest.raises(SelectionError) as err:
        Resolution(load_manifest(), sel).require()
    assert err.value.message.splitlines()[1].strip() == "needs HIP SDK 7.1 to 7.x: fork-3.9.6"


def test_nothing_fits_exits_3() -> None:
    res = _run("--json", "releases", "--os", "linux", "--hip", "5.2", "--cuda", "12")
    assert res.exit_code == 3 and json.loads(res.stdout)["selected"] is None


def test_gpu_rules_reject_and_warn() -> None:
    """A GPU x HIP rule the host breaks rejects what would run on that HIP (issue 22), in the rule's words."""
    res = _run("releases", "--os", "linux", "--hip", "6.2", "--cuda", "12", "--gpu", "gfx1201",
               env={"COLUMNS": None})  # piped: a line each
    sel = select_asset(load_manifest(), os="linux", hip="6.2", cuda=12, gfx="gfx1201")
    (rule,) = sel.gpu_rules  # RDNA4 needs ROCm 6.4
    assert (rule.os, rule.min, "gfx1201" in rule.gfx) == ("linux", "6.4", True)
    reason = rule.reason("gfx1201", "6.2")
    assert res.exit_code == 3 and f"warning: {reason}" in res.output.splitlines()  # said once, whole
    rejected = [r for r in sel.rejected if f"for your GPU: {reason}" in r.reasons]
    assert {r.asset_name for r in rejected} >= {"zluda-linux-3fe12063.tar.gz", "ZLUDA-linux-amd64.tar.gz"}
    v6 = next(r for r in rejected if r.release_id == "upstream-v6")  # the text shows each with its reasons
    # nothing fits: a line per release of this OS, its reasons without their sources (the warning has it)
    assert f"  upstream-v6: {'; '.join(r.rsplit(' [', 1)[0] for r in v6.reasons)}" in res.output.splitlines()
    fine = _run("releases", "--os", "linux", "--hip", "6.4", "--cuda", "12", "--gpu", "gfx1201")
    assert fine.exit_code == 0


# --------------------------------------------------------------------------- host HIP


def _debian_libamdhip64_5(root: Path) -> None:
    """The files Debian's libamdhip64-5 (5.2.3-8) ships, as `dpkg -c` lists them."""
    lib = root / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libamdhip64.so.5.2.21153").write_bytes(b"\x7fELF")
    os.symlink("libamdhip64.so.5.2.21153", lib / "libamdhip64.so.5")


def test_distribution_hip_52_is_found_and_nothing_claims_v6(tmp_path: Path) -> None:
    _debian_libamdhip64_5(tmp_path)
    found = find_host_hip(tmp_path, env={}, platform="linux")
    assert found is not None and found.kind == "distribution" and found.version == "5.2.21153"
    assert host_hip_version(tmp_path, env={}, platform="linux") == "5.2"
    sel = select_asset(load_manifest(), os="linux", hip=found.major_minor)
    assert sel.chosen is None
    v6 = next(r for r in sel.rejected if r.asset_name == "zluda-linux-3fe12063.tar.gz")
    assert "6 to 7.x" in v6.reasons[0] and "5.2" in v6.reasons[0]


def test_releases_and_run_use_the_same_host_hip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The host is a fake tree holding Debian's libamdhip64-5 (ZLUDA_RUNNER_ROOT): `releases` and the
    run path read the same HIP 5.2 from it, whatever the machine running the test has."""
    from zluda_runner.host.quick import hip_found as host_hip_found

    _debian_libamdhip64_5(tmp_path)
    monkeypatch.setenv("ZLUDA_RUNNER_ROOT", str(tmp_path))
    assert host_hip_found({"ZLUDA_RUNNER_ROOT": str(tmp_path)}).version == "5.2"
    assert host_hip_found().version == "5.2"
    res = _run("releases", "--os", "linux", "--cuda", "12", "--json")
    data = json.loads(res.output)
    assert data["constraints"]["os"] == "linux"
    assert data["constraints"]["hip"] == "5.2" and data["hip_source"] == "found on this host"
    assert data["selected"] is None and res.exit_code == 3


def test_rocm_folder_and_hip_sdk_versions(tmp_path: Path) -> None:
    info = tmp_path / "opt/rocm/.info"
    info.mkdir(parents=True)
    (info / "version").write_text("6.2.4-120\n")
    assert host_hip_version(tmp_path, env={}, platform="linux") == "6.2"
    other = tmp_path / "custom"
    (other / "include/hip").mkdir(parents=True)
    header = "#define HIP_VERSION_MAJOR 7\n#define HIP_VERSION_MINOR 1\n"
    (other / "include/hip/hip_version.h").write_text(header)
    assert host_hip_version(tmp_path, env={"ROCM_PATH": "/custom"}, platform="linux") == "7.1"
    sdk = tmp_path / "Program Files/AMD/ROCm"
    (sdk / "5.7").mkdir(parents=True)
    (sdk / "6.4").mkdir()
    env = {"ProgramFiles": "C:\\Program Files"}
    assert host_hip_version(tmp_path, env=env, platform="win32") == "6.4"
    assert host_hip_version(tmp_path / "empty", env={}, platform="linux") is None
