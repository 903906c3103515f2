"""`zluda-run plan` is a dry run: it never downloads. With no cached release it plans from the
manifest's file list, says the verdicts are provisional and what `run` would download."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


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
    assert plan["release"]["id"] == "upstream-v6"
    note = plan["warnings"][0]
    assert "not downloaded yet" in note and "zluda-linux-3fe12063.tar.gz" in note
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
    stub = next(p for p in cufft["problems"] if "stands in by name only" in p)
    assert "FFTs fail" in stub and "zluda_fft/src/lib.rs" in stub


def test_a_requested_release_that_does_not_fit_says_why_first(fake_torch, tmp_path: Path) -> None:
    """`--release fork-3.9.5` for torch built for CUDA 13: the fork serves CUDA 11 only, said first."""
    env = dict(fake_torch.env, ZLUDA_RUNNER_MIRROR="http://127.0.0.1:9")
    env.pop("ZLUDA_RUNNER_MANIFEST", None)
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "c"), "--release", "fork-3.9.5",
         "plan", "--", sys.executable, "-c", "pass"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 3 and "Traceback" not in proc.stderr  # nothing fits: exit 3 (issue 20 item 2)
    first = proc.stderr.split("hint:", 1)[0]
    assert first.startswith("error: release fork-3.9.5 does not fit this host")
    assert "needs torch built for CUDA 11: fork-3.9.5" in first
    assert "built for windows" not in first and "HIP SDK" not in first  # assets for another OS are not news
    assert "without --release: upstream-v6/" in first
