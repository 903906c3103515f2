"""``zluda-run --lock FILE -- CMD``: the locked release, mechanism and settings, nothing chosen again; a
locked file whose hash changed is exit 3 naming it; another GPU or HIP is a warning naming each
difference, and with ``--strict`` exit 3; ``--lock`` excludes ``--zluda-dir``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands.test_first_contact import debian_hip52_root
from tests.finder.conftest import WORKLOAD
from tests.finder.conftest import find_env as find_env
from tests.finder.conftest import pywrap as pywrap
from tests.finder.conftest import standins as standins
from tests.telemetry.fake_sysfs import one_gpu_host
from zluda_runner import Options
from zluda_runner.api.find import find
from zluda_runner.release.lockfile import read_lock


def _zluda_run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zluda_runner", *args], env=env, capture_output=True,
                          text=True, timeout=600, check=False)


@pytest.fixture()
def locked(standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path) -> Path:
    """A lock found over a copy of the stand-in that is right only with cuDNN off (its variant locked)."""
    release = tmp_path / "release"
    shutil.copytree(standins["cudnn"], release, symlinks=True)
    lock = tmp_path / "zluda.lock"
    report = find([str(pywrap), str(WORKLOAD)], candidates=[release], only_candidates=True, min_speedup=0.0,
                  lock=lock, options=Options(cache_dir=tmp_path / "cache", record=False))
    assert report.exit_code == 3 and report.lock is not None and report.lock.variant == "cudnn-off"
    return lock


def test_a_lock_runs_its_release_and_variant_without_searching(
    locked: Path, pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    proc = _zluda_run(find_env, "--cache-dir", str(tmp_path / "cache"), "--lock", str(locked), "--",
                      str(pywrap), str(WORKLOAD))
    assert proc.returncode == 0, proc.stderr
    assert "values [1.0, 2.0, -3.0, 4.0]" in proc.stdout  # right: the cuDNN-off variant was applied
    assert "find:" not in proc.stderr and "differs" not in proc.stderr  # nothing searched, same host


def test_a_changed_locked_file_is_exit_3_naming_it(
    locked: Path, pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    driver = Path(read_lock(locked).release.root or "") / "libcuda.so.1"
    driver.write_bytes(driver.read_bytes() + b"\0")
    proc = _zluda_run(find_env, "--json", "--cache-dir", str(tmp_path / "cache"), "--lock", str(locked), "--",
                      str(pywrap), str(WORKLOAD))
    assert proc.returncode == 3, proc.stderr
    error = json.loads(proc.stdout)
    assert error["kind"] == "lock-drift"
    assert error["details"]["changed"] == [{"path": str(driver), "change": "sha256"}]
    assert "values" not in proc.stdout  # the workload never started


def test_a_lock_from_another_host_warns_and_strict_refuses(
    locked: Path, pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    root = debian_hip52_root(tmp_path / "debian")  # HIP 5.2, a GPU and its driver: nothing else in the way
    one_gpu_host(root, busy=0)
    (root / "dev").mkdir()
    (root / "dev/kfd").touch()
    env = {**find_env, "ZLUDA_RUNNER_ROOT": str(root)}
    args = ["--cache-dir", str(tmp_path / "cache"), "--lock", str(locked), "--", str(pywrap), str(WORKLOAD)]
    warned = _zluda_run(env, *args)
    assert warned.returncode == 0, warned.stderr
    assert sum(line.startswith("warning: ") and "gfx1100" in line for line in warned.stderr.splitlines()) == 1
    strict = _zluda_run(env, "--json", "--strict", *args)
    assert strict.returncode == 3, strict.stderr
    error = json.loads(strict.stdout)
    assert error["kind"] == "lock-drift"
    found = {d["field"]: (d["locked"], d["here"]) for d in error["details"]["differences"]}
    assert found["gfx"] == (None, "gfx1100") and found["hip_version"] == (None, "5.2")


def test_lock_excludes_zluda_dir(locked: Path, find_env: dict[str, str], tmp_path: Path) -> None:
    proc = _zluda_run(find_env, "--json", "--lock", str(locked), "--zluda-dir", str(tmp_path), "--", "true")
    assert proc.returncode == 2, proc.stderr
    error = json.loads(proc.stdout)
    assert error["kind"] == "usage" and "--lock FILE" in error["error"] and "--zluda-dir" in error["error"]


def test_a_lock_that_is_not_one_names_the_field(find_env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "zluda.lock"
    bad.write_text(json.dumps({"schema": 1}), encoding="utf-8")
    proc = _zluda_run(find_env, "--json", "--lock", str(bad), "--", "true")
    assert proc.returncode == 1, proc.stderr
    error = json.loads(proc.stdout)
    assert error["kind"] == "lock" and "field 'release' is missing" in error["error"]
