"""The doctor's HIP SDK conflicts on the official Windows CPython under Wine: fake HIP SDK folders named by
HIP_PATH / HIP_PATH_62 / HIP_PATH_64 (real Windows paths on Wine's Z: drive, read by Windows Python),
math libraries and a release DLL built with mingw (tests/fixtures/windows/hip_sdk.c) whose import tables
the Windows interpreter reads with pefile."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.windows.winpy import WinPython, winpath


def _sdk(base: Path, version: str, files: dict[str, Path]) -> Path:
    folder = base / "ROCm" / version
    (folder / "bin" / "rocblas" / "library").mkdir(parents=True)
    for name, src in files.items():
        shutil.copyfile(src, folder / "bin" / name)
    return folder


def test_doctor_names_several_sdks_and_the_hip_runtime_mix(  # type: ignore[no-untyped-def]
        winpy: WinPython, mingw_build, tmp_path: Path) -> None:
    hip6 = mingw_build(["windows/hip_sdk.c"], "amdhip64_6.dll", args=["-DAMDHIP"])
    hip7 = mingw_build(["windows/hip_sdk.c"], "amdhip64_7.dll", args=["-DAMDHIP"])
    rocblas6 = mingw_build(["windows/hip_sdk.c", hip6], "rocblas.dll", args=["-DROCBLAS"])
    rocblas7 = mingw_build(["windows/hip_sdk.c", hip7], "rocblas_hip7.dll", args=["-DROCBLAS"])
    zluda7 = mingw_build(["windows/hip_sdk.c", hip7, rocblas7], "cublas_hip7.dll", args=["-DZLUDA_CUBLAS"])
    new = _sdk(tmp_path, "6.4", {"amdhip64_6.dll": hip6, "rocblas.dll": rocblas6, "MIOpen.dll": rocblas6})
    old = _sdk(tmp_path, "6.2", {"amdhip64_6.dll": hip6})
    release = tmp_path / "zluda"
    release.mkdir()
    shutil.copyfile(zluda7, release / "cublas64_12.dll")
    shutil.copyfile(mingw_build(["plan/win_stub.c"], "nvcuda.dll", args=["-DDRIVER"]), release / "nvcuda.dll")
    env = {"HIP_PATH": winpath(new) + "\\", "HIP_PATH_64": winpath(new) + "\\",
           "HIP_PATH_62": winpath(old) + "\\", "HIP_PATH_57": ""}
    out = winpy.zluda_run("--zluda-dir", winpath(release), "doctor", "--strict", "--json", env=env)
    assert out.returncode == 3, out.stdout + out.stderr
    report = json.loads(out.stdout)
    checks = {c["id"]: c for c in report["checks"]}
    sdks = checks["hip_sdks"]
    assert sdks["status"] == "warn", sdks
    found = {(s["version"], s["path"], tuple(s["variables"]), s["exists"], s["used"])
             for s in sdks["details"]["sdks"]}
    assert found == {("6.4", winpath(new), ("HIP_PATH", "HIP_PATH_64"), True, True),
                     ("6.2", winpath(old), ("HIP_PATH_62",), True, False)}
    assert sdks["details"]["used"] == winpath(new)
    assert [(c["kind"], c["severity"]) for c in sdks["details"]["conflicts"]] == [("several-sdks", "warn")]
    assert sdks["fix"].startswith("Keep HIP SDK 6.4: uninstall HIP SDK 6.2")
    mix = checks["hip_runtime_mix"]
    assert mix["status"] in ("warn", "fail"), mix  # fail where Wine's own System32 had an amdhip64_7.dll
    assert [c["kind"] for c in mix["details"]["conflicts"]] == ["hip-runtime-mix"]
    assert mix["details"]["release_hip"] == ["amdhip64_7.dll"]  # read from the release's own DLLs
    libraries = {lib["name"]: lib["hip_dlls"] for lib in mix["details"]["math_libraries"]}
    assert libraries == {"MIOpen.dll": ["amdhip64_6.dll"], "rocblas.dll": ["amdhip64_6.dll"]}
    assert "MIOpen.dll (amdhip64_6.dll), rocblas.dll (amdhip64_6.dll)" in mix["message"]
    assert mix["fix"].startswith("Install HIP SDK 7.x")
    # Wine has no AMD GPU: no GPU target, so the rocBLAS kernel check is skipped, not run
    assert "sdk_rocblas" not in checks and [s.split()[0] for s in report["skipped"]].count("sdk_rocblas") == 1
    text = winpy.zluda_run("--zluda-dir", winpath(release), "doctor", env=env)
    assert "[WARN] hip_sdks:" in text.stdout and "hip_runtime_mix:" in text.stdout, text.stdout
    assert "Traceback" not in text.stderr

    # the plan of a Windows program names the same conflicts, each with its fix
    app = tmp_path / "app"
    app.mkdir()
    cudart = mingw_build(["plan/win_stub.c"], "cudart64_12.dll", args=["-DCUDART"])
    shutil.copyfile(mingw_build(["windows/cuda_program.c", cudart], "cuda_program.exe", shared=False),
                    app / "cuda_program.exe")
    shutil.copyfile(cudart, app / "cudart64_12.dll")
    base = ["--cache-dir", winpath(tmp_path / "cache"), "--zluda-dir", winpath(release), "--json"]
    plan = winpy.zluda_run(*base, "plan", "--no-cache", "--", winpath(app / "cuda_program.exe"), env=env)
    assert "Traceback" not in plan.stderr, plan.stderr
    warnings = json.loads(plan.stdout)["warnings"]
    # each of the doctor's conflicts, with its fix, is one of the plan's warnings
    conflicts = [c for check in (sdks, mix) for c in check["details"]["conflicts"]]
    for conflict in conflicts:
        assert f"{conflict['message']} (fix: {conflict['fix']})" in warnings, (conflict, warnings)


def test_doctor_and_plan_say_hip_path_names_a_missing_folder_and_ask_no_linux_tool(  # type: ignore[no-untyped-def]
        winpy: WinPython, mingw_build, tmp_path: Path) -> None:
    """An uninstalled HIP SDK leaves HIP_PATH naming a folder that is gone (issue 29): the doctor's rocm
    check, the plan's warnings and the run's word about the host name it (on 3abffb6 the doctor said
    "HIP_PATH unset", the run "no AMD HIP SDK found"); the GPU is asked of HIP and the registry, not of
    rocminfo / rocm_agent_enumerator (Linux tools)."""
    gone = winpath(tmp_path / "AMD" / "ROCm" / "6.4") + "\\"
    env = {"HIP_PATH": gone, "HIP_PATH_64": gone, "HIP_PATH_57": "", "HIP_PATH_62": ""}
    hip7 = mingw_build(["windows/hip_sdk.c"], "amdhip64_7.dll", args=["-DAMDHIP"])
    rocblas7 = mingw_build(["windows/hip_sdk.c", hip7], "rocblas_hip7.dll", args=["-DROCBLAS"])
    zluda7 = mingw_build(["windows/hip_sdk.c", hip7, rocblas7], "cublas_hip7.dll", args=["-DZLUDA_CUBLAS"])
    release = tmp_path / "zluda"
    release.mkdir()
    shutil.copyfile(zluda7, release / "cublas64_12.dll")
    shutil.copyfile(mingw_build(["plan/win_stub.c"], "nvcuda.dll", args=["-DDRIVER"]), release / "nvcuda.dll")
    out = winpy.zluda_run("--zluda-dir", winpath(release), "doctor", "--json", env=env)
    assert "Traceback" not in out.stderr, out.stderr
    checks = {c["id"]: c for c in json.loads(out.stdout)["checks"]}
    rocm = checks["rocm"]
    assert rocm["status"] == "fail" and rocm["details"]["missing_folders"] == [
        {"variable": "HIP_PATH", "path": gone}, {"variable": "HIP_PATH_64", "path": gone}], rocm
    assert gone in rocm["message"]
    gpu = checks["gpu"]
    assert gpu["status"] == "fail" and gpu["details"]["asked"][:1] == ["hip"], gpu
    assert not {"rocminfo", "rocm_agent_enumerator"} & set(gpu["details"]["asked"]), gpu
    assert not any(t in gpu["message"] for t in ("rocminfo", "rocm_agent_enumerator")), gpu

    app = tmp_path / "app"
    app.mkdir()
    cudart = mingw_build(["plan/win_stub.c"], "cudart64_12.dll", args=["-DCUDART"])
    shutil.copyfile(mingw_build(["windows/cuda_program.c", cudart], "cuda_program.exe", shared=False),
                    app / "cuda_program.exe")
    shutil.copyfile(cudart, app / "cudart64_12.dll")
    base = ["--cache-dir", winpath(tmp_path / "cache"), "--zluda-dir", winpath(release), "--json"]
    plan = winpy.zluda_run(*base, "plan", "--no-cache", "--", winpath(app / "cuda_program.exe"), env=env)
    assert "Traceback" not in plan.stderr, plan.stderr
    warnings = json.loads(plan.stdout)["warnings"]
    assert any(gone.rstrip("\\") in w for w in warnings), warnings  # the SDK conflict, as the plan says it
    run = winpy.zluda_run(*base, "--strict", "--", winpath(app / "cuda_program.exe"), env=env)
    refusal = json.loads(run.stdout)
    assert (run.returncode, refusal["kind"]) == (3, "check-failed") and gone in refusal["error"], refusal
