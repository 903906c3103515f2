"""``releases --channel preview --os windows`` offers v7-preview.10 and .11 with their hashes and the
sources of name, hash and date (issue 22)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from zluda_runner.cli import main_group

P10 = ("upstream-v7-preview.10", "zluda-windows-9c8b43f.zip",
       "a80cfa84217773a1ca0f6b7eb2ee1de9de8cfd654adcab052b1978b031ccb74b")
P11 = ("upstream-v7-preview.11", "zluda-windows-ee2f25a.zip",
       "7788c1ed43385e62f0cc5f4d1aead24c92b671c02f1d685f63182540dea16d74")


def test_preview_channel_text_offers_both_previews_with_hash_and_source() -> None:
    res = CliRunner().invoke(main_group, ["releases", "--channel", "preview", "--os", "windows"])
    assert res.exit_code == 0, res.output
    offer = res.output.split("preview and nightly builds on offer", 1)[1].split("not selected:", 1)[0]
    for rid, name, sha in (P10, P11):
        block = offer.split(f"{rid}/{name}", 1)[1].split("\n  upstream-", 1)[0]
        assert f"sha256: {sha} [third-party pin (1 independent)" in block
        assert "source: release date: third-party usage" in block
    assert "Speedstu/CUDA-for-AMD-Windows:manifests/zluda-releases.json@9aec666a" in offer
    assert offer.index(P11[0]) < offer.index(P10[0])  # newest first


def test_preview_channel_json_lists_the_offer_and_stable_does_not() -> None:
    res = CliRunner().invoke(main_group, ["--json", "releases", "--channel", "preview", "--os", "windows"])
    data = json.loads(res.output)
    offered = {(o["release"], o["asset"]): o for o in data["offered_previews"]}
    for rid, name, sha in (P10, P11):
        entry = offered[(rid, name)]
        assert entry["sha256"] == sha and entry["sources"]["sha256"]["kind"] == "third-party pin"
        assert entry["commit"] and entry["date"]
    stable = json.loads(CliRunner().invoke(main_group, ["--json", "releases", "--os", "windows"]).output)
    assert stable["offered_previews"] == []
    text = CliRunner().invoke(main_group, ["releases", "--os", "windows"]).output
    assert "preview and nightly builds" not in text
