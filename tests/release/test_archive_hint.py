"""The hint that offers a hand-downloaded archive is a command line that works when followed (issue 29):
for an asset with no published hash it carries ``--trust-on-first-use`` (on 3abffb6 it said only
``--archive FILE``, and that command was refused again: "The manifest does not know the SHA-256 ...").
Each hint here is followed as a user would: its command, FILE replaced by the downloaded archive, run."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import one_asset_manifest
from zluda_runner.cli import main_group
from zluda_runner.core.envnames import CACHE_ENV, MANIFEST_ENV, MIRROR_ENV

NAME = "zluda-linux-abc1234.tar.gz"


def _unpublished(tmp_path: Path, payload: bytes) -> Path:
    """The packaged manifest with only upstream v6, whose Linux asset has no published SHA-256 (nor size)."""
    manifest = one_asset_manifest(tmp_path, payload, NAME, "linux")
    data = json.loads(manifest.read_text())
    asset = data["releases"][0]["assets"][0]
    asset.update(sha256="unknown", size=None)
    manifest.write_text(json.dumps(data))
    return manifest


def _follow(hint: str, archive: Path) -> list[str]:
    """The hint's zluda-run command line, FILE being the downloaded archive: the words after zluda-run."""
    commands = re.findall(r"`zluda-run ([^`]*--archive FILE[^`]*)`", hint)
    assert len(commands) == 1, hint
    return [str(archive) if word == "FILE" else word for word in shlex.split(commands[0])]


@pytest.mark.parametrize("mirror", ["https, nothing there", "plain http"])
def test_the_archive_hint_for_an_unpublished_hash_works_when_followed(
        tmp_path: Path, tls_server, server, kit, monkeypatch: pytest.MonkeyPatch, mirror: str) -> None:  # type: ignore[no-untyped-def]
    payload = kit.tar_gz(kit.ZLUDA_LIKE)
    archive = tmp_path / "downloaded" / NAME  # what the user downloaded by hand
    archive.parent.mkdir()
    archive.write_bytes(payload)
    monkeypatch.setenv(MANIFEST_ENV, str(_unpublished(tmp_path, payload)))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "cert.pem"))  # the test's own CA: https works
    if mirror == "plain http":  # trust on first use over http is refused before any byte
        server.add(f"/base/vosen/ZLUDA/releases/download/v6/{NAME}", payload)
        monkeypatch.setenv(MIRROR_ENV, server.url("/base"))
    else:  # the https mirror does not have it (404)
        monkeypatch.setenv(MIRROR_ENV, tls_server.url("/base"))
    runner = CliRunner()
    failed = runner.invoke(main_group, ["--json", "--trust-on-first-use", "fetch", "v6", "--os", "linux"],
                           catch_exceptions=False)
    error = json.loads(failed.stdout)
    assert (failed.exit_code, error["kind"]) == (1, "fetch"), error
    followed = runner.invoke(main_group, ["--json", *_follow(error["hint"], archive)], catch_exceptions=False)
    assert followed.exit_code == 0, followed.output
    done = json.loads(followed.stdout)
    assert Path(done["path"]).is_dir() and (Path(done["path"]) / "libcuda.so.1").is_file(), done
    trusted = json.loads((tmp_path / "cache" / "trust.json").read_text())["assets"]
    assert [entry["sha256"] for entry in trusted.values()] == [kit.sha256(payload)]  # recorded, as said
