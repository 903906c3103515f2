"""`zluda-run plan` on a fake host whose GPU breaks one of the manifest's GPU x HIP rules with its HIP
(issue 22): with a release given (--zluda-dir) the plan warns in the rule's words, with its fix and
source; without one, selection refuses (exit 3) in the same words. The GPU the plan judges is the one the
workload gets (HIP_VISIBLE_DEVICES). Host facts come from a fake root (``ZLUDA_RUNNER_ROOT``): the KFD
topology (gfx_target_version, kernel drivers/gpu/drm/amd/amdkfd/kfd_topology.c) and the HIP install."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.host.test_rules_wired import GFX1100, GFX1201, _amd_rocm, _debian_hip_64, _gpus
from zluda_runner.release.manifest import load_manifest

DEBIAN = "gfx1201 with HIP 6.4: Debian's packaged ROCm 6.4 has no gfx115x/gfx12xx kernels"
DEBIAN_SOURCE = "[unverified: stated in zluda-runner issue 22"
RDNA4_OLD_ROCM = "gfx1201 with HIP 6.2: RDNA4 (Radeon RX 9060/9070) is supported from ROCm 6.4.1"
RDNA4_SOURCE = "https://github.com/ggml-org/llama.cpp/pull/15994]"


def _debian_fix() -> str:
    """The fix the manifest's rule for Debian's ROCm 6.4 on gfx1201 gives (its ``fix`` field)."""
    (rule,) = [r for r in load_manifest().gpu_hip_rules if r.applies("gfx1201", "linux", "distribution")
               and not r.accepts("6.4") and r.fix]
    return rule.fix


def _host(tmp_path: Path, hip: str) -> dict[str, str]:
    root = tmp_path / "host"
    _gpus(root, GFX1100, GFX1201)
    if hip == "debian-6.4":
        _debian_hip_64(root)
    else:
        _amd_rocm(root, hip)
    env = {k: v for k, v in os.environ.items()
           if k not in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                        "HSA_OVERRIDE_GFX_VERSION", "ZLUDA_RUNNER_MANIFEST", "ROCM_PATH")}
    return {**env, "ZLUDA_RUNNER_ROOT": str(root), "ZLUDA_RUNNER_MIRROR": "http://127.0.0.1:9"}


@pytest.mark.parametrize(("hip", "words", "source"), [
    ("debian-6.4", DEBIAN, DEBIAN_SOURCE),
    ("6.2.4", RDNA4_OLD_ROCM, RDNA4_SOURCE),
])
def test_the_plan_warns_of_the_rule_the_gpu_it_uses_breaks(standin_releases, zluda_run, tmp_path: Path,
                                                            hip: str, words: str, source: str) -> None:
    env = _host(tmp_path, hip)
    argv = ["--json", "--cache-dir", str(tmp_path / "c"), "--zluda-dir", str(standin_releases["good"]),
            "plan", "--", "sh", "-c", "true"]
    device0 = zluda_run(argv, env=env)  # an RDNA3 GPU: no rule for it
    assert device0.returncode in (0, 3), device0.stderr
    assert not [w for w in json.loads(device0.stdout)["warnings"] if "gfx1201" in w]
    rdna4 = zluda_run(argv, env={**env, "HIP_VISIBLE_DEVICES": "1"})
    assert rdna4.returncode in (0, 3), rdna4.stderr
    warned = [w for w in json.loads(rdna4.stdout)["warnings"] if w.startswith(words)]
    assert len(warned) == 1 and source in warned[0], json.loads(rdna4.stdout)["warnings"]
    if hip == "debian-6.4":
        assert _debian_fix() in warned[0]  # the rule's fix, from the manifest


def test_without_a_release_given_the_plan_is_refused_in_the_rules_words(zluda_run, tmp_path: Path) -> None:
    env = {**_host(tmp_path, "debian-6.4"), "HIP_VISIBLE_DEVICES": "1"}
    proc = zluda_run(["--cache-dir", str(tmp_path / "c"), "plan", "--", "sh", "-c", "true"], env=env)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert DEBIAN in proc.stderr and "Traceback" not in proc.stderr
    assert _debian_fix() in " ".join(proc.stderr.split())  # the rule's fix, however the line folds
    fine = zluda_run(["--json", "--cache-dir", str(tmp_path / "c"), "plan", "--", "sh", "-c", "true"],
                     env={**env, "HIP_VISIBLE_DEVICES": "0"})
    assert fine.returncode in (0, 3), fine.stderr
    assert json.loads(fine.stdout)["release"]["id"] == "upstream-v6"
