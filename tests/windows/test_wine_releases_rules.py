"""``releases`` on the official Windows CPython under Wine (issue 22): the preview channel offers
v7-preview.10 and .11 with their hashes and sources, and a GPU x HIP rule rejects in its own words."""

from __future__ import annotations

import json

from tests.windows.winpy import WinPython


def test_preview_channel_offers_v7_previews_with_hashes(winpy: WinPython) -> None:
    out = winpy.zluda_run("releases", "--channel", "preview", "--os", "windows", "--hip", "6.4", "--json")
    assert out.returncode == 0, out.stderr
    offered = {o["asset"]: o for o in json.loads(out.stdout)["offered_previews"]}
    assert offered["zluda-windows-9c8b43f.zip"]["sha256"].startswith("a80cfa84")
    assert offered["zluda-windows-ee2f25a.zip"]["sha256"].startswith("7788c1ed")
    assert offered["zluda-windows-9c8b43f.zip"]["sources"]["sha256"]["kind"] == "third-party pin"
    text = winpy.zluda_run("releases", "--channel", "preview", "--os", "windows", "--hip", "6.4")
    assert "preview and nightly builds on offer" in text.stdout and "Traceback" not in text.stderr


def test_a_gpu_rule_rejects_rdna2_on_hip_7(winpy: WinPython) -> None:
    out = winpy.zluda_run("releases", "--os", "windows", "--hip", "7.1", "--cuda", "11", "--gpu", "gfx1031")
    assert out.returncode == 3 and "Traceback" not in out.stderr
    assert "RDNA2 (gfx103x) is not recognised with HIP SDK 7" in out.stdout + out.stderr


def test_a_given_zluda_folder_is_said_to_be_what_a_launch_uses(winpy: WinPython) -> None:
    """ZLUDA_RUNNER_ZLUDA_DIR set once (a Windows user's environment variable): releases says a launch
    uses that folder, not the release it selects."""
    out = winpy.zluda_run("releases", "--os", "windows", "--hip", "6.4",
                          env={"ZLUDA_RUNNER_ZLUDA_DIR": "C:\\zluda"})
    assert out.returncode == 0, out.stderr
    assert "--zluda-dir names C:\\zluda: a launch uses that folder, not the release selected here" in (
        out.stdout.replace("\n", " ").replace("  ", " "))
