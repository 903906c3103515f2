"""Acceptance (issue 22) on Windows: the applied defaults seen from inside a real Windows Python workload,
under Wine's real python.exe with zluda-runner installed from its wheel.

The target is PyPI's real Windows torch 2.13.0 made a CUDA 11.8 build (``new_cuda11_winpy``); the release
is a fork-shaped folder of stand-ins (no cuBLASLt, no cuDNN: the fork 3.9.x zip). Wine's host has no HIP
SDK (so no MIOpen) and no GPU list in HIP's order: the dedicated-GPU default does not apply here, and a
HIP_VISIBLE_DEVICES of the user's passes through. Rows: a regular interpreter (the sitecustomize
hook), ``--no-defaults``, a portable one (the ``.pth`` hook), and the placement path: after
``zluda-run place`` the placed-defaults hook applies them to a ``python`` the user starts alone, and
``zluda-run restore`` removes it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.windows.winpy import WinPython, torch_dir, winpath

pytestmark = pytest.mark.slow

WORKLOAD = """\
import json, os
import torch
b = torch.backends
print("DEFAULTS=" + json.dumps({
    "flash": b.cuda.flash_sdp_enabled(), "mem_efficient": b.cuda.mem_efficient_sdp_enabled(),
    "math": b.cuda.math_sdp_enabled(), "cudnn": b.cudnn.enabled,
    "hip_visible_devices": os.environ.get("HIP_VISIBLE_DEVICES"),
    "addmm_lt": os.environ.get("DISABLE_ADDMM_CUDA_LT")}), flush=True)
"""
APPLIED = {"flash": False, "mem_efficient": False, "math": True, "cudnn": False, "hip_visible_devices": None,
           "addmm_lt": "1"}
UNTOUCHED = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True, "hip_visible_devices": None,
             "addmm_lt": None}
NO_HIP = {"HIP_PATH": "", "HIP_PATH_57": "", "HIP_PATH_62": "", "HIP_PATH_64": ""}
FORK_STUBS = {"cusparse.dll": "CUSPARSE", "cufft.dll": "CUFFT", "cufftw.dll": "CUFFTW", "nvrtc.dll": "NVRTC"}


@pytest.fixture(scope="module")
def fork(mingw_build, standin, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    """A fork-shaped release (as tests/windows/test_wine_launch.py builds it)."""
    folder = tmp_path_factory.mktemp("fork-defaults") / "ZLUDA"
    folder.mkdir()
    shutil.copyfile(standin("zluda nvcuda", "DRIVER", "nvcuda.dll"), folder / "nvcuda.dll")
    shutil.copyfile(standin("zluda nvml", "NVML", "nvml.dll"), folder / "nvml.dll")
    shutil.copyfile(standin("zluda cublas", "CUBLAS", "cublas.dll"), folder / "cublas.dll")
    for name, flag in FORK_STUBS.items():
        shutil.copyfile(mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}"]), folder / name)
    shutil.copyfile(mingw_build(["windows/injector.c"], "zluda.exe", shared=False, args=["-municode"]),
                    folder / "zluda.exe")
    shutil.copyfile(mingw_build(["plan/win_stub.c"], "zluda_redirect.dll"), folder / "zluda_redirect.dll")
    return folder


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("defaults-workload") / "workload.py"
    path.write_text(WORKLOAD)
    return path


def _seen(proc) -> dict[str, object]:  # type: ignore[no-untyped-def]
    assert proc.returncode == 0, proc.stdout[-1500:] + proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("DEFAULTS=")]
    assert len(lines) == 1, proc.stdout
    seen: dict[str, object] = json.loads(lines[0].split("=", 1)[1])
    return seen


def _run(py: WinPython, fork: Path, cache: Path, workload: Path, *flags: str, **env: str):  # type: ignore[no-untyped-def]
    return py.zluda_run("--zluda-dir", winpath(fork), *flags, "run", "--", winpath(py.exe), winpath(workload),
                        env={"ZLUDA_RUNNER_CACHE": winpath(cache), **NO_HIP, **env})


def test_defaults_inside_a_regular_windows_python(new_cuda11_winpy, fork: Path, workload: Path,  # type: ignore[no-untyped-def]
                                                  tmp_path: Path) -> None:
    py: WinPython = new_cuda11_winpy(portable=False)
    cache = tmp_path / "cache"
    plan = py.zluda_run("--json", "--zluda-dir", winpath(fork), "plan", "--", winpath(py.exe), "x.py",
                        env={"ZLUDA_RUNNER_CACHE": winpath(cache), **NO_HIP})
    assert plan.returncode == 0, plan.stderr
    listed = {d["name"]: d for d in json.loads(plan.stdout)["defaults"]}
    assert {"sdpa-fused-off", "cudnn-off", "addmm-lt-off"} <= set(listed) and "dedicated-gpu" not in listed
    assert "no MIOpen" in listed["cudnn-off"]["reason"] and listed["sdpa-fused-off"]["vehicle"] == "startup"
    assert _seen(_run(py, fork, cache, workload)) == APPLIED
    assert _seen(_run(py, fork, cache, workload, "--no-defaults")) == UNTOUCHED
    mine = _seen(_run(py, fork, cache, workload, HIP_VISIBLE_DEVICES="0", DISABLE_ADDMM_CUDA_LT="0"))
    assert mine == {**APPLIED, "hip_visible_devices": "0", "addmm_lt": "0"}
    alone = _seen(py.run([workload], env=NO_HIP))  # without zluda-run: nothing of ours
    assert alone == UNTOUCHED


def test_defaults_inside_a_portable_windows_python(new_cuda11_winpy, fork: Path, workload: Path,  # type: ignore[no-untyped-def]
                                                   tmp_path: Path) -> None:
    py: WinPython = new_cuda11_winpy(portable=True)
    cache = tmp_path / "cache"
    assert _seen(_run(py, fork, cache, workload)) == APPLIED
    hook = py.site_packages / "zluda_runner_startup.pth"
    assert hook.is_file()
    assert _seen(py.run([workload], env=NO_HIP)) == UNTOUCHED  # the hook is inert outside zluda-run
    assert _seen(_run(py, fork, cache, workload, "--no-defaults")) == UNTOUCHED


def test_placed_defaults_reach_a_python_started_alone_and_restore_removes_them(
        new_cuda11_winpy, fork: Path, workload: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    py: WinPython = new_cuda11_winpy(portable=False)
    cache = tmp_path / "cache"
    lib = torch_dir(py) / "lib"
    env = {"ZLUDA_RUNNER_CACHE": winpath(cache)}
    placed = py.zluda_run("--json", "--zluda-dir", winpath(fork), "place", "--torch-lib", winpath(lib),
                          env={**NO_HIP, **env})
    assert placed.returncode == 0, placed.stderr[-3000:]
    hook = py.site_packages / "zluda_runner_defaults.pth"
    assert hook.is_file()
    assert json.loads(placed.stdout)["defaults_hook"].lower() == winpath(hook).lower(), placed.stdout
    assert _seen(py.run([workload], env=NO_HIP)) == APPLIED  # the user's own `python app.py`
    mine = _seen(py.run([workload], env={**NO_HIP, "DISABLE_ADDMM_CUDA_LT": "0"}))
    assert mine["addmm_lt"] == "0" and mine["flash"] is False  # the user's own value wins
    st = py.zluda_run("--json", "status", "--torch-lib", winpath(lib), env=env)
    assert [h.lower() for h in json.loads(st.stdout)["hooks"]] == [winpath(hook).lower()], st.stdout
    restored = py.zluda_run("restore", "--torch-lib", winpath(lib), env=env)
    assert restored.returncode == 0, restored.stderr[-3000:]
    assert not hook.exists()
    assert _seen(py.run([workload], env=NO_HIP)) == UNTOUCHED


PINNED_WORKLOAD = """\
import json, os, warnings
import torch
from torch.utils.data import DataLoader
t = torch.ones(3)
ours = "pin_memory" in vars(torch.Tensor)  # torch's own is TensorBase's method
# torch's own pin_memory() is called only where it is ours: in this stand-in world (a CPU torch made
# CUDA-shaped, stand-in DLLs) torch's own crashes the process under Wine
same = t.pin_memory() is t if ours else None
loader = DataLoader([torch.ones(2), torch.zeros(2)], batch_size=2, pin_memory=True)
with warnings.catch_warnings(record=True) as heard:
    warnings.simplefilter("always")
    batch = next(iter(loader))
print("PINNED=" + json.dumps({"ours": ours, "same": same, "loader": loader.pin_memory,
                              "batch_pinned": batch.is_pinned(), "warnings": len(heard)}), flush=True)
"""


def test_pinned_memory_off_inside_windows_torch_where_the_release_lacks_it(  # type: ignore[no-untyped-def]
        new_cuda11_winpy, standin, tmp_path: Path) -> None:
    """The manifest's upstream-v6 (its Windows asset here: a v6-shaped zip of stand-ins), which the
    manifest records as lacking cuMemAllocHost/cuMemHostRegister: inside PyPI's real Windows torch 2.13,
    ``Tensor.pin_memory()`` returns the tensor itself and a DataLoader's ``pin_memory`` reads False (its
    iterator pins nothing and does not warn); with ``--no-defaults`` torch's own method and flag are
    left as they are."""
    from tests.conftest import one_asset_manifest
    from tests.release.conftest import zip_bytes

    py: WinPython = new_cuda11_winpy(portable=False)
    files = {"nvcuda.dll": standin("v6 nvcuda", "DRIVER", "nvcuda.dll"),
             "nvml.dll": standin("v6 nvml", "NVML", "nvml.dll"),
             "cublas64_11.dll": standin("v6 cublas", "CUBLAS", "cublas64_11.dll")}
    archive = tmp_path / "zluda-windows-pinned.zip"
    members = [("file", f"zluda/{name}", path.read_bytes()) for name, path in files.items()]
    archive.write_bytes(zip_bytes(members))
    manifest = one_asset_manifest(tmp_path, archive.read_bytes(), archive.name, "windows")
    workload = tmp_path / "pinned.py"
    workload.write_text(PINNED_WORKLOAD)
    cache = tmp_path / "cache"
    base = ["--cache-dir", winpath(cache), "--manifest", winpath(manifest), "--archive", winpath(archive)]
    plan = py.zluda_run("--json", *base, "plan", "--", winpath(py.exe), winpath(workload), env=NO_HIP)
    assert plan.returncode == 0, plan.stderr[-3000:]
    listed = {d["name"]: d for d in json.loads(plan.stdout)["defaults"]}
    assert listed["pinned-memory-off"]["applied"] and listed["pinned-memory-off"]["vehicle"] == "startup"

    def seen(*flags: str) -> dict[str, object]:
        proc = py.zluda_run(*base, *flags, "run", "--", winpath(py.exe), winpath(workload), env=NO_HIP)
        assert proc.returncode == 0, proc.stdout[-1500:] + proc.stderr[-3000:]
        lines = [line for line in proc.stdout.splitlines() if line.startswith("PINNED=")]
        assert len(lines) == 1, proc.stdout
        got: dict[str, object] = json.loads(lines[0].split("=", 1)[1])
        return got

    assert seen() == {"ours": True, "same": True, "loader": False, "batch_pinned": False, "warnings": 0}
    off = seen("--no-defaults")
    assert off == {"ours": False, "same": None, "loader": True, "batch_pinned": False, "warnings": 1}
