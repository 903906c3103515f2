"""``releases`` on the official Windows CPython under Wine (issue 22): the preview channel offers
v7-preview.10 and .11 with their hashes and sources, and a GPU x HIP rule rejects in its own words."""

from __future__ import annotations

import json

from tests.windows.winpy import WinPython
from zluda_runner.release.manifest import load_manifest
from zluda_runner.release.selection import rules_against


def test_preview_channel_offers_v7_previews_with_hashes(winpy: WinPython) -> None:
    out = winpy.zluda_run("releases", "--channel", "preview", "--os", "windows", "--hip", "6.4", "--json")
    assert out.returncode == 0, out.stderr
    offered = {o["asset"]: o for o in json.loads(out.stdout)["offered_previews"]}
    assert offered["zluda-windows-9c8b43f.zip"]["sha256"].startswith("a80cfa84")
    assert offered["zluda-windows-ee2f25a.zip"]["sha256"].startswith("7788c1ed")
    assert offered["zluda-windows-9c8b43f.zip"]["sources"]["sha256"]["kind"] == "third-party pin"
    text = winpy.zluda_run("releases", "--channel", "preview", "--os", "windows", "--hip", "6.4")
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
    assert all(asset in text.stdout for asset in offered), text.stdout  # the text view offers each one


def test_a_gpu_rule_rejects_rdna2_on_hip_7(winpy: WinPython) -> None:
    out = winpy.zluda_run("releases", "--os", "windows", "--hip", "7.1", "--cuda", "11", "--gpu", "gfx1031")
    assert out.returncode == 3 and "Traceback" not in out.stderr
    # the manifest's own rule for this GPU and HIP, shown in its own words
    [rule] = rules_against(load_manifest().gpu_hip_rules, "gfx1031", "7.1", "windows", None)
    assert rule.label and rule.label in out.stdout + out.stderr, out.stdout + out.stderr


def test_a_given_zluda_folder_is_said_to_be_what_a_launch_uses(winpy: WinPython) -> None:
    """ZLUDA_RUNNER_ZLUDA_DIR set once (a Windows user's environment variable): releases says a launch
    uses that folder, not the release it selects."""
    out = winpy.zluda_run("--json", "releases", "--os", "windows", "--hip", "6.4",
                          env={"ZLUDA_RUNNER_ZLUDA_DIR": "C:\\zluda"})
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    assert listing["selected"] is not None  # a release is selected, and the folder is said to win over it
    [aside] = [w for w in listing["warnings"] if "C:\\zluda" in w]
    # it names the option and the variable to leave out to run the selected release instead
    assert aside.startswith("--zluda-dir ") and "ZLUDA_RUNNER_ZLUDA_DIR" in aside, aside
