"""Acceptance (issue 29) on Windows, under Wine's real python.exe with zluda-runner from its wheel: ZLUDA's
cuDNN DLL imports ``MIOpen.dll``, which no folder Windows searches holds (no HIP SDK on this host): it
is not placed, NVIDIA's ``cudnn64_9.dll`` stays in torch/lib, cuDNN is switched off, and the workload runs.

The target is PyPI's real Windows torch 2.13.0 made a CUDA 11.8 build (the fork's) whose ``torch_cuda.dll``
imports cudart, cuBLAS and cuDNN 9 by NVIDIA's names (NVIDIA's real cudart64_110.dll; cuBLAS and cuDNN
stand-ins); the release is fork-shaped, with a ``cudnn.dll`` (the fork's name for cudnn64_9.dll).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.windows.test_wine_defaults import FORK_STUBS, NO_HIP
from tests.windows.winpy import WinPython, make_torch_cuda_shaped, torch_dir, winpath

pytestmark = pytest.mark.slow

TORCH_CUDA = """\
__declspec(dllimport) int cudaGetDeviceCount(int *count);
__declspec(dllimport) int cublasCreate_v2(void **handle);
__declspec(dllimport) int cudnnCreate(void **handle);
__declspec(dllexport) int torch_cuda_calls(void) {
    void *handle = 0; int count = 0;
    return cudaGetDeviceCount(&count) + cublasCreate_v2(&handle) + cudnnCreate(&handle);
}
"""
CUDNN = """\
__declspec(dllimport) int miopenCreate(void **handle);
__declspec(dllexport) int cudnnCreate(void **handle) { return miopenCreate(handle); }
"""
MIOPEN = "__declspec(dllexport) int miopenCreate(void **handle) { *handle = 0; return ANSWER; }\n"


def _source(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def world(mingw_build, standin, nvidia_cudart, new_winpy,  # type: ignore[no-untyped-def]
          tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    src = tmp_path_factory.mktemp("unbound-src")
    nv_cudnn = mingw_build([_source(src, "nv_cudnn.c", MIOPEN.replace("miopenCreate", "cudnnCreate"))],
                           "cudnn64_9.dll", args=["-DANSWER=42"])
    nv_cublas = standin("nvidia cublas", "CUBLAS", "cublas64_11.dll", answer=42)
    cudart = nvidia_cudart["cudart64_110.dll"]
    torch_cuda = mingw_build([_source(src, "torch_cuda.c", TORCH_CUDA), cudart, nv_cublas, nv_cudnn],
                             "torch_cuda.dll")
    miopen = mingw_build([_source(src, "miopen.c", MIOPEN)], "MIOpen.dll", args=["-DANSWER=0"])
    release = tmp_path_factory.mktemp("fork-unbound") / "ZLUDA"
    release.mkdir()
    shutil.copyfile(standin("zluda nvcuda", "DRIVER", "nvcuda.dll"), release / "nvcuda.dll")
    shutil.copyfile(standin("zluda nvml", "NVML", "nvml.dll"), release / "nvml.dll")
    shutil.copyfile(standin("zluda cublas", "CUBLAS", "cublas.dll"), release / "cublas.dll")
    shutil.copyfile(mingw_build([_source(src, "cudnn.c", CUDNN), miopen], "cudnn.dll"), release / "cudnn.dll")
    for name, flag in FORK_STUBS.items():  # every file the fork's zip always ships
        shutil.copyfile(mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}"]), release / name)
    shutil.copyfile(mingw_build(["windows/injector.c"], "zluda.exe", shared=False, args=["-municode"]),
                    release / "zluda.exe")  # the fork's launchers make the folder read as the fork's zip
    shutil.copyfile(mingw_build(["plan/win_stub.c"], "zluda_redirect.dll"), release / "zluda_redirect.dll")
    py: WinPython = new_winpy(portable=False, torch=True)
    make_torch_cuda_shaped(py.site_packages / "torch", "11.8", {
        "cudart64_110.dll": cudart, "cublas64_11.dll": nv_cublas, "cudnn64_9.dll": nv_cudnn,
        "torch_cuda.dll": torch_cuda})
    return {"py": py, "release": release, "nv_cudnn": nv_cudnn}


def test_without_miopen_the_cudnn_dll_is_not_placed_and_torch_runs(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    py: WinPython = world["py"]
    release: Path = world["release"]
    env = {"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache"), **NO_HIP}
    code = "import torch; print(torch.backends.cudnn.enabled)"
    planned = py.zluda_run("--json", "--zluda-dir", winpath(release), "plan", "--", winpath(py.exe), "-c",
                           code, env=env)
    data = json.loads(planned.stdout)
    assert planned.returncode == 0, [(b["need"], b["problems"]) for b in data["bindings"] if b["problems"]]
    cudnn = next(b for b in data["bindings"] if b["need"].lower() == "cudnn64_9.dll")
    assert (cudnn["action"], cudnn["verdict"]) == ("unbound", "warn"), cudnn
    assert "MIOpen.dll" in cudnn["problems"][0] and "MIOpen.dll" in cudnn["problems"][-1]
    assert "cudnn64_9.dll" not in {p["dest_name"].lower() for p in data["placements"]}
    assert {p["dest_name"].lower() for p in data["placements"]} >= {"nvcuda.dll", "cublas64_11.dll"}
    off = next(d for d in data["defaults"] if d["name"] == "cudnn-off")
    assert off["applied"] and "cudnn.dll" in off["reason"]
    ran = py.zluda_run("--zluda-dir", winpath(release), "run", "--", winpath(py.exe), "-c", code, env=env)
    assert (ran.returncode, ran.stdout.strip()) == (0, "False"), ran.stdout[-1500:] + ran.stderr[-3000:]
    assert (torch_dir(py) / "lib" / "cudnn64_9.dll").read_bytes() == Path(world["nv_cudnn"]).read_bytes()
