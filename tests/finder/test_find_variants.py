"""find's variants that follow the host and the manifest, over stand-ins built here: "the other HIP SDK"
where several ROCm folders are installed (the variant plans, launches and locks with that HIP; ``--lock``
takes it again), and pinned memory off where the release lacks it (by the manifest's data: the
manifest's upstream-v6, whose one asset here is a stand-in); each named in the lock's settings and in
the view, and tried in the order the issue asks (the other HIP, a plan of its own, first)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import one_asset_manifest
from tests.finder.conftest import WORKLOAD, rocm_tree
from tests.release.conftest import tar_gz
from zluda_runner.release.lockfile import read_lock


def _zluda_run(env: dict[str, str], tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    glob = ["--cache-dir", str(tmp_path / "cache"), "--results-db", str(tmp_path / "results.db")]
    return subprocess.run([sys.executable, "-m", "zluda_runner", *glob, *args], env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def _values(proc: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in proc.stdout.splitlines() if line.startswith("values "))


def test_find_tries_the_other_hip_first_and_the_lock_takes_it_again(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    """Two ROCm folders: 7.1 (the newest: what a run takes by default), whose HIP does not initialise, and
    6.2, whose does. The defaults' run computes wrong; the other HIP is tried before cuDNN off, runs on
    6.2's libamdhip64.so and is locked with that HIP; ``--lock`` takes 6.2 again (a plain run: 7.1)."""
    root = rocm_tree(Path(find_env["ZLUDA_RUNNER_ROOT"]), tmp_path / "hips", {"7.1.0": 1, "6.2.0": 0})
    lock_file = tmp_path / "zluda.lock"
    cmd = ["--", str(pywrap), str(WORKLOAD)]
    proc = _zluda_run(find_env, tmp_path, "--json", "find", "--only-candidates", "--candidate",
                      str(standins["hip"]), "--min-speedup", "0", "--lock", str(lock_file), *cmd)
    assert proc.returncode == 3, proc.stderr  # not proven on the GPU: no telemetry in the fake tree
    report = json.loads(proc.stdout)
    tried = [(v["candidate"]["variant"], v["candidate"]["hip"], v["status"]) for v in report["verdicts"]]
    assert tried == [("defaults", None, "fail"), ("other-hip", "/opt/rocm-6.2.0", "unproven")]
    assert report["verdicts"][0]["why"].startswith("right failed:")
    lock = read_lock(lock_file)
    assert lock.variant == "other-hip" and lock.schema == 2
    assert (lock.host.hip_path, lock.host.hip_version) == ("/opt/rocm-6.2.0", "6.2")
    assert lock.host.hip_from is not None and "/opt/rocm-6.2.0" in lock.host.hip_from  # where it was read
    assert [s.name for s in lock.settings if s.applied][-1] == "other-hip"
    assert [f.candidate for f in lock.failed] == [f"dir {standins['hip']}"]
    view = _zluda_run(find_env, tmp_path / "again", "find", "--only-candidates", "--candidate",
                      str(standins["hip"]), "--min-speedup", "0", "--lock", str(tmp_path / "v.lock"), *cmd)
    assert f"dir {standins['hip']} [other-hip /opt/rocm-6.2.0]" in view.stdout  # the view names it
    # --lock: the same HIP again, nothing searched; without it, the host's own pick (7.1) computes wrong
    locked = _zluda_run(find_env, tmp_path, "--lock", str(lock_file), *cmd)
    assert locked.returncode == 0, locked.stderr
    assert _values(locked) == "values [1.0, 2.0, -3.0, 4.0]"
    plain = _zluda_run(find_env, tmp_path, "--zluda-dir", str(standins["hip"]), *cmd)
    assert plain.returncode == 0 and _values(plain) == "values [1.0, 2.5, -3.0, 4.0]", plain.stderr
    # the locked HIP gone: the host's own one (7.1) is used, and the difference is named with both folders
    (root / "opt/rocm-6.2.0").rename(root / "opt/gone")
    drifted = _zluda_run(find_env, tmp_path, "--lock", str(lock_file), *cmd)
    assert drifted.returncode == 0 and _values(drifted) == "values [1.0, 2.5, -3.0, 4.0]", drifted.stderr
    named = [line for line in drifted.stderr.splitlines() if str(lock_file) in line]
    assert named and "/opt/rocm-6.2.0" in named[0] and "/opt/rocm-7.1.0" in named[0], drifted.stderr

def test_find_tries_pinned_memory_off_where_the_manifest_says_the_release_lacks_it(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    """The candidate is the manifest's upstream-v6 (its one Linux asset: a stand-in archive that works only
    with pinned memory off); the launcher target is not inspected as Python, so the default is not
    listed and the variant is tried, before cuDNN off, and locked with its name in the settings and its
    change of the start-up list; ``--lock`` applies it again."""
    driver = (standins["pinned"] / "libcuda.so.1").read_bytes()
    archive = tmp_path / "zluda-linux-pinned.tar.gz"
    archive.write_bytes(tar_gz([("dir", "zluda"), ("file", "zluda/libcuda.so.1", driver, 0o755),
                                ("symlink", "zluda/libcuda.so", "libcuda.so.1")]))
    manifest = one_asset_manifest(tmp_path, archive.read_bytes(), archive.name, "linux")
    rocm_tree(Path(find_env["ZLUDA_RUNNER_ROOT"]), tmp_path / "hips", {"6.4.1": 0})
    lock_file = tmp_path / "zluda.lock"
    cmd = ["--", str(pywrap), str(WORKLOAD)]
    proc = _zluda_run(find_env, tmp_path, "--manifest", str(manifest), "--json", "find", "--only-candidates",
                      "--candidate", str(archive), "--min-speedup", "0", "--lock", str(lock_file), *cmd)
    assert proc.returncode == 3, proc.stderr
    report = json.loads(proc.stdout)
    tried = [(v["candidate"]["variant"], v["release"], v["status"]) for v in report["verdicts"]]
    assert tried == [("defaults", "upstream-v6", "fail"), ("pinned-memory-off", "upstream-v6", "unproven")]
    lock = read_lock(lock_file)
    assert lock.variant == "pinned-memory-off" and lock.release.id == "upstream-v6"
    assert lock.env == {"ZLUDA_RUNNER_TORCH_DEFAULTS": "pinned-memory-off"}
    assert ("pinned-memory-off", True) in [(s.name, s.applied) for s in lock.settings]
    locked = _zluda_run(find_env, tmp_path, "--manifest", str(manifest), "--lock", str(lock_file), *cmd)
    assert locked.returncode == 0, locked.stderr
    assert _values(locked) == "values [1.0, 2.0, -3.0, 4.0]"
    # the same files given as a folder, which no manifest data speaks for: no pinned variant, cuDNN off only
    folder = _zluda_run(find_env, tmp_path / "folder", "--json", "find", "--only-candidates", "--candidate",
                        str(standins["pinned"]), "--min-speedup", "0", "--lock", str(tmp_path / "f.lock"),
                        *cmd)
    tried = [v["candidate"]["variant"] for v in json.loads(folder.stdout)["verdicts"]]
    assert tried == ["defaults", "cudnn-off"]


def test_variants_in_order_cheapest_rejections_first() -> None:
    """The other HIPs first (each a plan of its own: FATAL costs no run), then pinned memory off where the
    release lacks it and the defaults left it on (--no-defaults here), then cuDNN off; none of the pinned
    kind where the manifest records no gap, or where the default already switched it off."""
    from dataclasses import replace

    from zluda_runner.finder.candidates import variants_for
    from zluda_runner.finder.model import Candidate
    from zluda_runner.host.hipchoice import HipInstall
    from zluda_runner.plan.defaults import DefaultsFacts, compute_defaults
    from zluda_runner.plan.model import PlanTarget, ShimPlan

    facts = DefaultsFacts(enabled=False, python=True, torch_version="2.13.0+cu128", release_id="upstream-v6",
                          unpinned=("cuMemAllocHost", "cuMemHostRegister"))
    plan = ShimPlan(target=PlanTarget(python="/venv/bin/python", torch="2.13.0+cu128", cuda="12.8"),
                    defaults=compute_defaults(facts))
    hips = (HipInstall("/opt/rocm-6.2.0", "6.2.0", "header", "rocm"),
            HipInstall("/opt/rocm-5.7.1", "5.7.1", "header", "rocm"))
    cand = Candidate("manifest", "upstream-v6")
    got = [(c.variant, c.hip) for c in variants_for(cand, plan, facts, hips)]
    assert got == [("other-hip", "/opt/rocm-6.2.0"), ("other-hip", "/opt/rocm-5.7.1"),
                   ("pinned-memory-off", None), ("cudnn-off", None)]
    assert all(c.ref == "upstream-v6" for c in variants_for(cand, plan, facts, hips))
    on = replace(facts, enabled=True)
    # the defaults already switch pinned memory and cuDNN off (no MIOpen to try cuDNN on with): nothing
    assert variants_for(cand, replace(plan, defaults=compute_defaults(on)), on) == []
    none = replace(facts, unpinned=())
    assert [c.variant for c in variants_for(cand, replace(plan, defaults=compute_defaults(none)), none)] == [
        "cudnn-off"]
