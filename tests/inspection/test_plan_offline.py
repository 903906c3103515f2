"""`zluda-run plan` is a dry run: it never downloads. With no cached release it plans from the
manifest's file list, says the verdicts are provisional and what `run` would download."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.golden import assert_golden
from tests.release.test_cli import commands
from zluda_runner.release.layout import stub_text
from zluda_runner.release.manifest import load_manifest


def test_plan_never_downloads(fake_torch, tmp_path: Path) -> None:
    env = dict(fake_torch.env)
    # any download would go here, where nothing listens: it would fail the command at once
    env["ZLUDA_RUNNER_MIRROR"] = "http://127.0.0.1:9"
    env["ROCM_PATH"] = str(tmp_path / "no-rocm")
    env.pop("ZLUDA_RUNNER_MANIFEST", None)
    cache = tmp_path / "cache"
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--cache-dir", str(cache), "--release", "upstream-v6",
         "plan", "--json", "--", sys.executable, "-c", "pass"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode in (0, 3), proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["provisional"] is True
    assert (plan["release"]["id"], plan["release"]["asset"]) == ("upstream-v6", "zluda-linux-3fe12063.tar.gz")
    (note,) = plan["warnings"]  # the one warning: what `run` would download
    assert plan["release"]["asset"] in note  # and the commands that download it
    assert commands(note) == ["zluda-run run", "zluda-run fetch upstream-v6"]
    replaced = {b["need"]: b for b in plan["bindings"] if b["action"] == "replace"}
    assert "libcublas.so.13" in replaced and "libcuda.so.1" in replaced
    assert all(any("provisional" in r for r in b["reasons"]) for b in replaced.values())
    # nothing was downloaded or unpacked
    assert not (cache / "downloads").exists() or not any((cache / "downloads").rglob("*"))
    assert not (cache / "releases").exists() or not any((cache / "releases").rglob("*"))


def test_a_stub_cufft_is_named_in_the_plan(fake_torch, tmp_path: Path) -> None:
    """Every v6 cuFFT function is an unimplemented stub (manifest, sourced): replacing cuFFT with it
    is a warning that says FFTs fail, with the source."""
    env = dict(fake_torch.env, ZLUDA_RUNNER_MIRROR="http://127.0.0.1:9", ROCM_PATH=str(tmp_path / "x"))
    env.pop("ZLUDA_RUNNER_MANIFEST", None)
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "c"), "--release", "upstream-v6",
         "plan", "--json", "--", sys.executable, "-c", "pass"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    cufft = next(b for b in json.loads(proc.stdout)["bindings"] if b["need"] == "libcufft.so.12")
    assert cufft["action"] == "replace" and cufft["verdict"] == "warn"
    release = next(r for r in load_manifest(None).releases if r.id == "upstream-v6")
    listed = next(f for a in release.assets if a.os == "linux" for f in a.files if f.family == "cufft")
    assert listed.stub and cufft["stub"] == stub_text(listed)  # the manifest's words, with its source
    assert "vosen/ZLUDA:zluda_fft/src/lib.rs@3fe12063" in cufft["stub"]
    assert sum(cufft["stub"] in p for p in cufft["problems"]) == 1  # a problem behind the warning


def test_a_requested_release_that_does_not_fit_says_why_first(fake_torch, tmp_path: Path) -> None:
    """`--release fork-3.9.5` for torch built for CUDA 13: the fork serves CUDA 11 only, said first; the
    host is an empty root (no HIP), so what is said is this test's alone."""
    env = {k: v for k, v in fake_torch.env.items()
           if not k.startswith("ZLUDA_RUNNER_") and k not in ("ROCM_PATH", "HIP_PATH")}
    (tmp_path / "root").mkdir()
    env.update(ZLUDA_RUNNER_MIRROR="http://127.0.0.1:9", ZLUDA_RUNNER_ROOT=str(tmp_path / "root"),
               COLUMNS="200")
    argv = [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "c"),
            "--release", "fork-3.9.5", "plan", "--", sys.executable, "-c", "pass"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr  # nothing fits: exit 3 (issue 20 item 2)
    assert proc.stderr.startswith("error: release fork-3.9.5 does not fit this host")
    # what the fork needs first (CUDA 11, its Linux asset only: assets for another OS are not news), then
    # the release that fits without --release; the hint
    assert_golden("inspect-plan-release-needs-cuda11", proc.stderr, tmp=tmp_path)
    as_json = json.loads(subprocess.run([*argv[:3], "--json", *argv[3:]], capture_output=True, text=True,
                                        env=env, timeout=120).stdout)
    assert (as_json["kind"], as_json["exit_code"]) == ("nothing-fits", 3)
