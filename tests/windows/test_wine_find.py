"""``zluda-run find`` on the official Windows CPython under Wine (PyPI's Windows torch made a CUDA 11.8
build): over a fork-shaped stand-in release whose driver computes wrong and an upstream-v6-shaped one
that works, each candidate judged as poc judges -- the fork's defaults (placement; cuDNN already off:
no MIOpen here) and its injector variant (zluda.exe, nothing placed) each failing "right"; the v6 one
locked, "not proven on the GPU" (Windows' GPU counters under Wine show nothing); ``--lock`` runs the locked
release again without a search; ``restore`` leaves NVIDIA's files in torch/lib byte-identical."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path, PureWindowsPath

import pytest

from tests.windows.winpy import WinPython, torch_dir, winpath
from zluda_runner.release.lockfile import read_lock

pytestmark = pytest.mark.slow

# loads the driver by name on the side under test (not the CPU reference), as a CUDA program does; a
# driver answering 7 plants an offset (it "computes wrong")
WORKLOAD = """\
import ctypes, os
from zluda_runner import ab
values = [1.0, 2.0, -3.0, 4.0]
with ab.timer("work"):
    if os.environ.get("CUDA_VISIBLE_DEVICES") != "":
        answer = ctypes.WinDLL("nvcuda.dll").standin_answer()
        values[1] += 0.5 * (answer == 7)
ab.record("values", values)
print("values", values)
"""
_CALL = re.compile(r"^\[standin ([^\]]+)\] (\w+)", re.MULTILINE)


def _release(folder: Path, tag: str, answer: int, names: dict[str, str], mingw_build, standin) -> Path:  # type: ignore[no-untyped-def]
    folder.mkdir(parents=True)
    shutil.copyfile(standin(f"{tag} nvcuda", "DRIVER", "nvcuda.dll", answer=answer), folder / "nvcuda.dll")
    shutil.copyfile(standin(f"{tag} nvml", "NVML", "nvml.dll"), folder / "nvml.dll")
    for name, flag in names.items():
        built = (standin(f"{tag} cublas", "CUBLAS", name) if flag == "CUBLAS"
                 else mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}"]))
        shutil.copyfile(built, folder / name)
    shutil.copyfile(mingw_build(["windows/injector.c"], "zluda.exe", shared=False, args=["-municode"]),
                    folder / "zluda.exe")
    shutil.copyfile(mingw_build(["plan/win_stub.c"], "zluda_redirect.dll"), folder / "zluda_redirect.dll")
    return folder


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_find_judges_placement_and_injector_locks_the_one_that_works_and_lock_runs_it(
    new_cuda11_winpy, mingw_build, standin, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    py: WinPython = new_cuda11_winpy(portable=False)
    fork = _release(tmp_path / "fork" / "ZLUDA", "fork", 7, {
        "cublas.dll": "CUBLAS", "cusparse.dll": "CUSPARSE", "cufft.dll": "CUFFT", "cufftw.dll": "CUFFTW",
        "nvrtc.dll": "NVRTC"}, mingw_build, standin)
    v6 = _release(tmp_path / "v6" / "zluda", "v6", 0, {
        "cublas64_11.dll": "CUBLAS", "cusparse64_11.dll": "CUSPARSE", "cufft64_10.dll": "CUFFT",
        "cufftw64_10.dll": "CUFFTW"}, mingw_build, standin)
    workload = tmp_path / "workload.py"
    workload.write_text(WORKLOAD, encoding="utf-8")
    lib = torch_dir(py) / "lib"
    nvidia = _tree(lib)
    env = {"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache")}
    db, lock_file = tmp_path / "results.db", tmp_path / "zluda.lock"
    cmd = ["--", winpath(py.exe), winpath(workload)]
    found = py.zluda_run("--results-db", winpath(db), "--json", "find", "--only-candidates",
                         "--candidate", winpath(fork), "--candidate", winpath(v6), "--min-speedup", "0",
                         "--lock", winpath(lock_file), *cmd, env=env)
    assert "Traceback" not in found.stderr, found.stderr
    assert found.returncode == 3, found.stdout + found.stderr  # not proven on the GPU: no counters here
    report = json.loads(found.stdout)
    tried = [(PureWindowsPath(v["candidate"]["ref"]).parent.name, v["candidate"]["variant"], v["status"])
             for v in report["verdicts"]]
    # no MIOpen here: the defaults switch cuDNN off already, so the variant worth a run is the injector
    assert tried == [("fork", "defaults", "fail"), ("fork", "injector", "fail"),
                     ("v6", "defaults", "unproven")]
    assert all(v["why"].startswith("right failed:") for v in report["verdicts"][:2]), report["verdicts"]
    lock = read_lock(lock_file)
    assert lock.release.source == "dir" and PureWindowsPath(lock.release.root or "").parent.name == "v6"
    assert lock.host.os == "windows" and lock.variant == "defaults" and not lock.proven_on_gpu
    assert lock.mechanism != "injector"
    assert [f.candidate.rsplit(" ", 1)[-1] for f in lock.failed][-1] == "[injector]"
    # --lock: the same release and settings, nothing searched; ZLUDA's v6 driver answered the workload
    locked = py.zluda_run("--lock", winpath(lock_file), "run", *cmd, env=env)
    assert locked.returncode == 0, locked.stdout + locked.stderr
    assert ("v6 nvcuda", "standin_answer") in _CALL.findall(locked.stdout)
    assert ("fork nvcuda", "standin_answer") not in _CALL.findall(locked.stdout)
    # a changed locked file is refused, naming it
    (v6 / "nvml.dll").write_bytes((v6 / "nvml.dll").read_bytes() + b"\0")
    drifted = py.zluda_run("--json", "--lock", winpath(lock_file), "run", *cmd, env=env)
    assert drifted.returncode == 3 and "Traceback" not in drifted.stderr, drifted.stderr
    error = json.loads(drifted.stdout)
    assert error["kind"] == "lock-drift"
    assert [(PureWindowsPath(c["path"]).name, c["change"]) for c in error["details"]["changed"]] == [
        ("nvml.dll", "sha256")]
    # restore: NVIDIA's files as they were before any placement
    restored = py.zluda_run("restore", "--torch-lib", winpath(lib), env=env)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert _tree(lib) == nvidia


def test_find_tries_the_other_hip_sdk_and_the_lock_takes_it_again(  # type: ignore[no-untyped-def]
    new_cuda11_winpy, mingw_build, standin, tmp_path: Path
) -> None:
    """Two HIP SDKs side by side (``HIP_PATH`` = 6.4, the one a run takes; ``HIP_PATH_62``), neither ``bin``
    on PATH. The v6-shaped release's cuBLAS imports rocblas.dll and amdhip64_6.dll (their real import
    tables, read with pefile): with the host's own SDK its plan is FATAL (no run); the other SDK's plan puts
    its bin on PATH, the workload runs (torch's DLL loop finds them there) and is locked with that SDK;
    ``--lock`` takes it again; ``restore`` leaves NVIDIA's files as they were."""
    py: WinPython = new_cuda11_winpy(portable=False)
    hip6 = mingw_build(["windows/hip_sdk.c"], "amdhip64_6.dll", args=["-DAMDHIP"])
    rocblas6 = mingw_build(["windows/hip_sdk.c", hip6], "rocblas.dll", args=["-DROCBLAS"])
    zluda = mingw_build(["windows/hip_sdk.c", hip6, rocblas6], "cublas.dll", args=["-DZLUDA_CUBLAS"])
    sdks = {}
    for version in ("6.4", "6.2"):
        folder = tmp_path / "ROCm" / version / "bin"
        folder.mkdir(parents=True)
        shutil.copyfile(hip6, folder / "amdhip64_6.dll")
        shutil.copyfile(rocblas6, folder / "rocblas.dll")
        sdks[version] = winpath(folder.parent)
    v6 = _release(tmp_path / "v6" / "zluda", "v6", 0, {
        "cusparse64_11.dll": "CUSPARSE", "cufft64_10.dll": "CUFFT"}, mingw_build, standin)
    shutil.copyfile(zluda, v6 / "cublas64_11.dll")
    workload = tmp_path / "workload.py"
    workload.write_text(WORKLOAD, encoding="utf-8")
    lib = torch_dir(py) / "lib"
    nvidia = _tree(lib)
    env = {"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache"), "HIP_PATH": sdks["6.4"],
           "HIP_PATH_62": sdks["6.2"], "HIP_PATH_57": "", "HIP_PATH_64": ""}
    lock_file = tmp_path / "zluda.lock"
    cmd = ["--", winpath(py.exe), winpath(workload)]
    found = py.zluda_run("--results-db", winpath(tmp_path / "results.db"), "--json", "find",
                         "--only-candidates", "--candidate", winpath(v6), "--min-speedup", "0",
                         "--lock", winpath(lock_file), *cmd, env=env)
    assert "Traceback" not in found.stderr, found.stderr
    assert found.returncode == 3, found.stdout + found.stderr
    report = json.loads(found.stdout)
    tried = [(v["candidate"]["variant"], v["candidate"]["hip"], v["stage"], v["status"])
             for v in report["verdicts"]]
    assert tried == [("defaults", None, "plan", "fail"), ("other-hip", sdks["6.2"], "run", "unproven")]
    assert "rocblas.dll" in report["verdicts"][0]["why"]  # the FATAL binding's missing dependency
    lock = read_lock(lock_file)
    assert lock.variant == "other-hip" and lock.host.os == "windows"
    assert (lock.host.hip_path, lock.host.hip_version) == (sdks["6.2"], "6.2")
    assert [s.name for s in lock.settings if s.applied][-1] == "other-hip"
    locked = py.zluda_run("--lock", winpath(lock_file), "run", *cmd, env=env)
    assert locked.returncode == 0, locked.stdout + locked.stderr
    assert "values [1.0, 2.0, -3.0, 4.0]" in locked.stdout
    plain = py.zluda_run("--json", "--zluda-dir", winpath(v6), "plan", *cmd, env=env)
    assert "Traceback" not in plain.stderr, plain.stderr  # the host's own SDK: FATAL as before
    assert any(b["verdict"] == "fatal" for b in json.loads(plain.stdout)["bindings"]), plain.stdout
    restored = py.zluda_run("restore", "--torch-lib", winpath(lib), env=env)
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert _tree(lib) == nvidia
