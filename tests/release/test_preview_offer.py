"""``releases --channel preview --os windows`` offers v7-preview.10 and .11 with their hashes and the
sources of name, hash and date (issue 22)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tests.golden import assert_golden
from zluda_runner.cli import main_group

P10 = ("upstream-v7-preview.10", "zluda-windows-9c8b43f.zip",
       "a80cfa84217773a1ca0f6b7eb2ee1de9de8cfd654adcab052b1978b031ccb74b")
P11 = ("upstream-v7-preview.11", "zluda-windows-ee2f25a.zip",
       "7788c1ed43385e62f0cc5f4d1aead24c92b671c02f1d685f63182540dea16d74")


def _offers(text: str) -> list[str]:
    """The lines that offer a preview, ``  ID/ASSET (DATE, commit ...)``; a rejection: ``  ID/ASSET: ...``."""
    return [line for line in text.splitlines() if line.startswith(("  upstream-", "  fork-")) and " (" in line
            and ":" not in line.split(" (", 1)[0]]


def test_preview_channel_text_offers_both_previews_with_hash_and_source() -> None:
    res = CliRunner().invoke(main_group, ["releases", "--channel", "preview", "--os", "windows"],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    start = lines.index(_offers(res.output)[0]) - 1  # the section's heading, then its offers
    rejections = next(i for i, line in enumerate(lines) if line.startswith("not selected"))
    offer = "\n".join(lines[start:rejections]) + "\n"
    # newest first, each with its date and commit, its SHA-256 with the third-party pin that gives it, and
    # the sources of its name and date (Speedstu/CUDA-for-AMD-Windows:manifests/zluda-releases.json@9aec666a)
    assert_golden("release-preview-offer-windows", offer)
    assert [line.split()[0] for line in _offers(offer)] == [
        f"{P11[0]}/{P11[1]}", f"{P10[0]}/{P10[1]}", "fork-3.9.5/ZLUDA-nightly-windows-rocm6-amd64.zip"]
    for _rid, _name, sha in (P10, P11):
        assert sha in offer


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
    assert _offers(text) == []  # the stable channel's text offers none (its rejections name them)
