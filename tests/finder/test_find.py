"""``zluda-run find`` over stand-in releases built here: each failure named (SIGABRT; the FATAL binding,
no run; "right" with the comparator's detail), the cuDNN-off variant tried and locked; without GPU
telemetry the lock says "not proven on the GPU" and the exit code is 3; with a simulated one, 0."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.finder.conftest import WORKLOAD
from tests.telemetry.fake_sysfs import card_device, one_gpu_host
from zluda_runner import Options, get_result, list_results
from zluda_runner.api.find import find
from zluda_runner.release.lockfile import read_lock


def _zluda_run(env: dict[str, str], tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    glob = ["--cache-dir", str(tmp_path / "cache"), "--results-db", str(tmp_path / "results.db")]
    return subprocess.run([sys.executable, "-m", "zluda_runner", *glob, *args], env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def test_find_names_each_failure_and_locks_the_cudnn_off_variant_not_proven_on_the_gpu(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    lock_file = tmp_path / "zluda.lock"
    given = [w for kind in ("abort", "fatal", "wrong", "cudnn", "ok")
             for w in ("--candidate", str(standins[kind]))]
    proc = _zluda_run(find_env, tmp_path, "--json", "find", "--only-candidates", *given, "--min-speedup", "0",
                      "--lock", str(lock_file), "--", str(pywrap), str(WORKLOAD))
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    tried = [(v["candidate"]["ref"], v["candidate"]["variant"], v["stage"], v["status"])
             for v in report["verdicts"]]
    assert tried == [
        (str(standins["abort"]), "defaults", "run", "fail"),
        (str(standins["abort"]), "cudnn-off", "run", "fail"),
        (str(standins["fatal"]), "defaults", "plan", "fail"),  # no run: no variant either
        (str(standins["wrong"]), "defaults", "run", "fail"),
        (str(standins["wrong"]), "cudnn-off", "run", "fail"),
        (str(standins["cudnn"]), "defaults", "run", "fail"),
        (str(standins["cudnn"]), "cudnn-off", "run", "unproven"),
    ]  # the search stopped there: the "ok" one was never tried
    why = [v["why"] for v in report["verdicts"]]
    assert why[0] == "ran failed: killed by SIGABRT"
    assert "libamdhip64.so" in why[2]  # the FATAL binding's missing library (stage "plan": nothing ran)
    right = {c["name"]: c for c in report["verdicts"][3]["criteria"]}["right"]
    assert why[3].startswith("right failed:") and right["status"] == "fail" and "0.5" in why[3]
    assert report["stopped"] == "passed" and report["left"] == 1
    # the lock: that release, hashed; the variant; the criteria, "on the GPU" not shown; the failures
    lock = read_lock(lock_file)
    assert report["lock"] == json.loads(lock.to_json())
    assert lock.release.source == "dir" and lock.release.root == str(standins["cudnn"])
    files = {f.path: f for f in lock.release.files}
    assert files["libcuda.so"].link == "libcuda.so.1" and files["libcuda.so.1"].sha256
    assert lock.variant == "cudnn-off" and lock.env == {"ZLUDA_RUNNER_TORCH_DEFAULTS": "cudnn-off"}
    assert ("cudnn-off", True) in [(s.name, s.applied) for s in lock.settings]
    assert {c.name: c.status for c in lock.criteria} == {
        "ran": "pass", "right": "pass", "on the GPU": "not shown", "stable": "pass", "speed": "pass"}
    assert not lock.proven_on_gpu and lock.not_proven[0].startswith("not proven on the GPU: ")
    assert [(f.candidate, f.stage) for f in lock.failed] == [
        (f"dir {standins['abort']}", "run"), (f"dir {standins['abort']} [cudnn-off]", "run"),
        (f"dir {standins['fatal']}", "plan"), (f"dir {standins['wrong']}", "run"),
        (f"dir {standins['wrong']} [cudnn-off]", "run"), (f"dir {standins['cudnn']}", "run")]
    assert lock.mechanism == "ld_library_path" and lock.host.os == "linux" and lock.host.gfx is None
    assert lock.workload == (str(pywrap), str(WORKLOAD))
    # the live line said which candidate was tried and how many were left
    live = re.findall(r"^find: trying (\d+): (.+) \((\d+) more queued\)$", proc.stderr, re.MULTILINE)
    assert live[0] == ("1", f"dir {standins['abort']}", "4") and len(live) == len(tried)


def test_find_with_gpu_telemetry_passes_all_five_and_exits_0(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    root = Path(find_env["ZLUDA_RUNNER_ROOT"])
    card = one_gpu_host(root, busy=0)  # a simulated amdgpu card the workload "uses"
    options = Options(cache_dir=tmp_path / "cache", results_db=str(tmp_path / "results.db"))
    report = find([str(pywrap), str(WORKLOAD), "--gpu", str(card_device(root, card.card))],
                  candidates=[standins["wrong"], standins["ok"]], only_candidates=True, min_speedup=0.0,
                  interval=0.005, lock=tmp_path / "zluda.lock", options=options, root=root)
    assert report.exit_code == 0, [v.why for v in report.verdicts]
    assert [(v.candidate.ref, v.candidate.variant, v.status) for v in report.verdicts] == [
        (str(standins["wrong"]), "defaults", "fail"), (str(standins["wrong"]), "cudnn-off", "fail"),
        (str(standins["ok"]), "defaults", "pass")]
    lock = read_lock(tmp_path / "zluda.lock")
    assert lock.proven_on_gpu and not lock.not_proven
    assert [c.status for c in lock.criteria] == ["pass"] * 5
    # recorded: kind find, one item per candidate
    (stored,) = list_results(options, kind="find")
    items = [(i.item.rsplit("/", 1)[-1], i.status) for i in get_result(stored.run_id or "", options).items]
    assert sorted(items) == [("lock", "proven"), ("ok", "pass"), ("wrong", "fail"),
                             ("wrong [cudnn-off]", "fail")]  # the paths as the store keeps them (the
    # user's name redacted), and the lock, shared
    assert stored.summary["verdict"] == "pass" and stored.summary["proven_on_gpu"] is True


def test_nothing_that_works_locks_nothing(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    report = find([str(pywrap), str(WORKLOAD)], candidates=[standins["fatal"]], only_candidates=True,
                  lock=tmp_path / "zluda.lock", options=Options(cache_dir=tmp_path / "c", record=False))
    assert report.exit_code == 3 and report.lock is None and not (tmp_path / "zluda.lock").exists()
    assert [v.stage for v in report.verdicts] == ["plan"]


def test_no_candidate_is_an_error_not_a_traceback(find_env: dict[str, str], tmp_path: Path) -> None:
    proc = _zluda_run(find_env, tmp_path, "--json", "find", "--only-candidates", "--", "true")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)
    assert error["kind"] == "host" and error["exit_code"] == 1 and "--candidate" in error["error"]


@pytest.mark.parametrize("bad", ["--runs=0", "--budget=0"])
def test_bad_numbers_are_usage_errors(bad: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "zluda_runner", "find", bad, "--", "true"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_ctrl_c_exits_130_with_what_was_judged_and_leaves_nothing(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**find_env, "TMPDIR": str(tmp)}
    proc = _zluda_run(env, tmp_path, "--json", "find", "--only-candidates",
                      "--candidate", str(standins["wrong"]), "--candidate", str(standins["interrupt"]),
                      "--candidate", str(standins["ok"]),
                      "--lock", str(tmp_path / "zluda.lock"), "--", str(pywrap), str(WORKLOAD))
    assert proc.returncode == 130, proc.stderr
    report = json.loads(proc.stdout)
    assert report["stopped"] == "interrupted" and report["left"] == 1  # "ok" was never tried
    assert [(v["candidate"]["ref"], v["status"]) for v in report["verdicts"]] == [
        (str(standins["wrong"]), "fail"), (str(standins["wrong"]), "fail")]
    assert report["lock"] is None and not (tmp_path / "zluda.lock").exists()  # nothing worked: no lock
    assert list(tmp.iterdir()) == []  # the record folders went with the interrupted run
