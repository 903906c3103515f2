"""A ``file://`` mirror whose asset is a FIFO (or a device) is refused at once, never a hang (issue 20,
nothing-lost item 17). The fetch runs as its own process under a timeout: on 5c673db it blocked in
open() and the timeout fails the test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.release.test_cli import setup  # noqa: F401  (a manifest served by a file:// mirror)

ROOT = Path(__file__).resolve().parents[2]


def test_a_fifo_in_a_file_mirror_is_refused_not_waited_on(setup) -> None:  # noqa: F811
    _run, cache, _payload, tmp_path = setup
    asset = tmp_path / "mirror" / "vosen/ZLUDA/releases/download/v6/zluda-linux-test.tar.gz"
    asset.unlink()
    os.mkfifo(asset)  # no program writes to it
    argv = [sys.executable, "-m", "zluda_runner", "--json", "--manifest", str(tmp_path / "manifest.json"),
            "--cache-dir", str(cache), "fetch", "v6", "--os", "linux"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT,
                         stdin=subprocess.DEVNULL, env=os.environ.copy())  # the fixture's file:// mirror
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    error = json.loads(out.stdout)
    assert str(asset) in error["error"] and "FIFO" in error["error"], error
    assert not (cache / "releases").exists()
