"""The static side on Windows, under Wine's real python.exe: `plan` and `inspect` of zluda-runner as
installed, against PyPI's real Windows torch 2.13.0 (its own DLL loop) made CUDA-11.8-shaped with
NVIDIA's real cudart64_110.dll, in the portable layout (python313._pth) ComfyUI-Zluda and SD.Next ship.

The dependency walk: a fork-shaped release whose cublas.dll imports rocblas.dll and amdhip64_6.dll, which
sit in a HIP-SDK-shaped folder outside torch/lib and off PATH (named by HIP_PATH, as AMD's installer
does). The plan names the missing DLLs with that folder and the fix before anything is launched; the
real torch, given the same DLL in torch/lib by hand (without zluda-runner), fails to import with the
error users report; with the folder put on PATH as the plan says, the import succeeds, the stand-ins
report which file served each call, and the plan is ok.

(Wine builds the Windows PATH from its registry and ``WINEPATH``: a test puts a folder on PATH with
``WINEPATH``, as a user would with ``set PATH=...``.)
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path, PureWindowsPath

import pytest

from tests.golden import assert_golden
from tests.windows.report_lines import read_report
from tests.windows.winpy import WinPython, make_torch_cuda_shaped, torch_dir, winpath

pytestmark = pytest.mark.slow

# the fork's zip (fork 3.9.x, ZLUDA-windows-amd64.zip): file -> -D flag of win_stub.c; cublas.dll is the
# HIP-importing stand-in (tests/fixtures/windows/hip_sdk.c)
FORK_STUBS = {"nvcuda.dll": "DRIVER", "nvml.dll": "NVML", "cusparse.dll": "CUSPARSE", "cufft.dll": "CUFFT",
              "cufftw.dll": "CUFFTW", "nvrtc.dll": "NVRTC"}
LINUX_WORDS = ("LD_AUDIT", "LD_PRELOAD", "LD_LIBRARY_PATH", "dlopen", "ELF", "SONAME", "ld.so")


def show(title: str, text: str) -> None:
    print(f"\n===== {title}\n{text}")


@pytest.fixture(scope="module")
def hip_setup(new_winpy, mingw_build, nvidia_cudart, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """(python, its torch/lib, the fork folder, the HIP SDK root, NVIDIA's original cublas64_11.dll). The
    python is the portable layout (python313._pth with ``import site``), as ComfyUI-Zluda ships it."""
    py: WinPython = new_winpy(portable=True, torch=True)
    base = tmp_path_factory.mktemp("hip-walk")
    cudart = nvidia_cudart["cudart64_110.dll"]
    original = mingw_build(["plan/win_stub.c"], "cublas64_11.dll", args=["-DCUBLAS", "-DANSWER=42"])
    torch_cuda = mingw_build(["windows/torch_cuda.c", cudart, original], "torch_cuda.dll")
    torch = torch_dir(py)
    make_torch_cuda_shaped(torch, "11.8", {"cudart64_110.dll": cudart, "cublas64_11.dll": original,
                                           "torch_cuda.dll": torch_cuda})
    hip = mingw_build(["windows/hip_sdk.c"], "amdhip64_6.dll", args=["-DAMDHIP"])
    rocblas = mingw_build(["windows/hip_sdk.c", hip], "rocblas.dll", args=["-DROCBLAS"])
    cublas = mingw_build(["windows/hip_sdk.c", hip, rocblas], "cublas.dll", args=["-DZLUDA_CUBLAS"])
    sdk = base / "AMD" / "ROCm" / "6.2"
    (sdk / "bin").mkdir(parents=True)
    shutil.copyfile(hip, sdk / "bin" / "amdhip64_6.dll")
    shutil.copyfile(rocblas, sdk / "bin" / "rocblas.dll")
    fork = base / "ZLUDA"
    fork.mkdir()
    for name, flag in FORK_STUBS.items():
        shutil.copyfile(mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}"]), fork / name)
    shutil.copyfile(cublas, fork / "cublas.dll")
    shutil.copyfile(mingw_build(["windows/injector.c"], "zluda.exe", shared=False, args=["-municode"]),
                    fork / "zluda.exe")
    shutil.copyfile(mingw_build(["plan/win_stub.c"], "zluda_redirect.dll"), fork / "zluda_redirect.dll")
    return py, torch / "lib", fork, sdk, original


def _plan(py: WinPython, fork: Path, cache: Path, env: dict[str, str], *, as_json: bool):  # type: ignore[no-untyped-def]
    args = ["--cache-dir", winpath(cache), "--zluda-dir", winpath(fork), *(["--json"] if as_json else []),
            "plan", "--no-cache", "--", winpath(py.exe), "x.py"]
    return py.zluda_run(*args, env=env)


def test_the_walk_names_a_missing_rocblas_and_real_torch_fails_the_same_until_the_fix(
        hip_setup, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    py, lib, fork, sdk, original = hip_setup
    sdk_bin = winpath(sdk / "bin")
    env = {"HIP_PATH": winpath(sdk) + "\\"}

    # 1. the plan, before anything is launched: fatal (exit 3), naming the DLL, its folder and the fix
    text = _plan(py, fork, tmp_path / "cache", env, as_json=False)
    show("plan (HIP SDK's bin not on PATH)", text.stdout + text.stderr)
    assert text.returncode == 3, text.stderr
    flat = re.sub(r"\s*\n\s*", " ", text.stdout)
    assert not [w for w in LINUX_WORDS if w in flat]
    assert ("cublas64_11.dll needs rocblas.dll, which is in none of the folders Windows searches for it: "
            f"it is in {sdk_bin} (HIP_PATH\\bin), which is not on PATH: add that folder to PATH "
            f"(set PATH={sdk_bin};%PATH%)") in flat
    data = json.loads(_plan(py, fork, tmp_path / "cache", env, as_json=True).stdout)
    cublas = next(b for b in data["bindings"] if b["need"] == "cublas64_11.dll")
    shim = PureWindowsPath(cublas["shim"]).name
    assert (data["verdict"], cublas["verdict"], shim) == ("fatal", "fatal", "cublas.dll")
    assert {p.split(",")[0] for p in cublas["problems"]} == {"cublas64_11.dll needs rocblas.dll",
                                                            "cublas64_11.dll needs amdhip64_6.dll"}

    # 2. the real torch, ZLUDA's cublas placed by hand as users do: the same failure, from torch's own loop
    shutil.copyfile(fork / "cublas.dll", lib / "cublas64_11.dll")
    probe = ("import os, ctypes, torch; h = ctypes.c_void_p(); "
             "dll = ctypes.CDLL(os.path.join(torch.__path__[0], 'lib', 'cublas64_11.dll')); "
             "print('cublasCreate_v2 ->', dll.cublasCreate_v2(ctypes.byref(h)))")
    try:
        failed = py.run(["-c", probe], env=env)
        show("import torch (the DLL in torch/lib, HIP's bin not on PATH)", failed.stderr[-800:])
        assert failed.returncode == 1
        assert re.search(r'Error loading "[^"]*\\(cublas64_11|torch_cuda)\.dll" or one of its dependencies',
                         failed.stderr), failed.stderr[-2000:]
        assert "WinError 126" in failed.stderr

        # 3. the fix the plan names (the folder on PATH): the import succeeds, HIP's files serve the calls
        fixed = py.run(["-c", probe], env={**env, "WINEPATH": sdk_bin})
        show("import torch with the fix applied", fixed.stdout + fixed.stderr[-800:])
        assert fixed.returncode == 0, fixed.stderr[-2000:]
        seen = read_report(fixed.stdout)
        assert seen.modules_of("rocblas", "rocblas_create_handle") == {f"{sdk_bin}\\rocblas.dll"}
        assert seen.blas_create == (0,)
    finally:
        shutil.copyfile(original, lib / "cublas64_11.dll")

    # 4. and the plan agrees: ok, found by the loop's retry on PATH
    ok = _plan(py, fork, tmp_path / "cache", {**env, "WINEPATH": sdk_bin}, as_json=True)
    show("plan --json with the fix applied (cublas64_11.dll)", ok.stdout[:200])
    assert ok.returncode == 0, ok.stdout + ok.stderr
    data = json.loads(ok.stdout)
    cublas = next(b for b in data["bindings"] if b["need"] == "cublas64_11.dll")
    assert data["verdict"] != "fatal" and cublas["verdict"] == "ok" and cublas["problems"] == []
    # its dependencies are found in the HIP SDK's bin, now on PATH
    assert any(sdk_bin.lower() in r.lower() for r in cublas["reasons"]), cublas["reasons"]


def test_zluda_dir_on_the_fork_folder_maps_its_un_renamed_dlls(hip_setup, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Under Windows' own Python: --zluda-dir on the unpacked fork zip places cublas.dll as
    cublas64_11.dll, as the manifest release does (the walk's fix applied, so nothing is fatal)."""
    py, _, fork, sdk, _ = hip_setup
    out = _plan(py, fork, tmp_path / "cache", {"HIP_PATH": winpath(sdk), "WINEPATH": winpath(sdk / "bin")},
                as_json=True)
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    placed = {p["dest_name"]: PureWindowsPath(p["source"]).name for p in data["placements"]}
    show("placements of --zluda-dir <fork>", json.dumps(placed, indent=1))
    assert placed["cublas64_11.dll"] == "cublas.dll" and placed["nvcuda.dll"] == "nvcuda.dll"
    assert placed.get("cusparse64_11.dll", "cusparse.dll") == "cusparse.dll"


def test_inspect_reports_the_start_up_of_a_portable_python(hip_setup) -> None:  # type: ignore[no-untyped-def]
    """The ._pth file, PYTHONPATH ignored, site enabled, sys.path as the file lists it (the regular layout:
    tests/windows/test_wine_commands.py)."""
    portable: WinPython = hip_setup[0]
    out = portable.zluda_run("inspect")
    show("inspect (portable python313._pth)", out.stdout)
    assert out.returncode == 0, out.stderr
    assert "damaged" not in out.stdout and "skipped" not in out.stdout  # torch_python.dll's 6000+ imports
    home = winpath(portable.home)
    assert f"{home}\\python313._pth" in re.sub(r"\s*\n\s*", " ", out.stdout)  # the text names the ._pth
    st = json.loads(portable.zluda_run("--json", "inspect").stdout)["startup"]
    assert st["pth_file"] == f"{home}\\python313._pth" and st["honours_pythonpath"] is False
    assert st["site_enabled"] is True
    assert st["sys_path"] == [f"{home}\\python313.zip", home, f"{home}\\Lib\\site-packages"]
    assert f"{home}\\Lib\\site-packages" in st["site_packages"]


def test_a_plain_exe_is_inspected_and_planned_in_windows_words(hip_setup, mingw_build, nvidia_cudart,  # type: ignore[no-untyped-def]
                                                                tmp_path: Path) -> None:
    """`inspect APP.exe` and `plan -- APP.exe` under Windows' Python: the program is the target (read as PE),
    its driver comes through the release's injector, and nothing in the plan speaks of Linux's loader."""
    py, _, fork, _, _ = hip_setup
    app = tmp_path / "app"
    app.mkdir()
    cudart = nvidia_cudart["cudart64_12.dll"]
    shutil.copyfile(mingw_build(["windows/cuda_program.c", cudart], "cuda_program.exe", shared=False),
                    app / "cuda_program.exe")
    shutil.copyfile(cudart, app / "cudart64_12.dll")
    exe = winpath(app / "cuda_program.exe")
    inspected = py.zluda_run("--json", "inspect", exe)
    assert inspected.returncode == 0, inspected.stderr
    profile = json.loads(inspected.stdout)
    assert profile["os"] == "windows" and profile["roots"] == [exe]
    assert {lib["name"] for lib in profile["libraries"]} >= {"cudart64_12.dll"}
    base = ["--cache-dir", winpath(tmp_path / "cache"), "--zluda-dir", winpath(fork)]
    text = py.zluda_run(*base, "plan", "--no-cache", "--", exe)
    show("plan -- cuda_program.exe", text.stdout + text.stderr)
    assert text.returncode == 0, text.stdout + text.stderr
    view = text.stdout.replace(winpath(fork), "<fork>").replace(winpath(tmp_path), "<tmp>")
    assert_golden("wine-plan-plain-exe", view)  # its target, the injector loading nvcuda.dll, the verdict
    data = json.loads(py.zluda_run(*base, "--json", "plan", "--no-cache", "--", exe).stdout)
    driver = next(b for b in data["bindings"] if b["need"] == "nvcuda.dll")
    assert (data["target"]["binary"], driver["mechanism"]) == (exe, "injector")
    for word in LINUX_WORDS:
        assert word not in text.stdout and word not in json.dumps(data), word
