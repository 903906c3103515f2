"""Launching on Windows, end to end under Wine's real python.exe: zluda-runner as installed from its wheel
runs workloads through the fork-shaped release, and the stand-ins' own output says which DLL served.

The target is PyPI's real Windows torch 2.13.0 made a CUDA 11.8 build (``new_cuda11_winpy``: NVIDIA's real
cudart64_110.dll, an "NVIDIA" cuBLAS stand-in answering 42, a torch_cuda.dll importing both). The release
is a folder shaped like the fork's Windows zip whose nvcuda.dll, nvml.dll and cublas.dll are stand-ins
printing ``[standin zluda ...] FUNCTION (module PATH)``, with a zluda.exe injector stand-in.

Rows (issue 19's acceptance): torch's real DLL loop through a regular and a portable (``._pth``) Python;
a workload that loads nvcuda.dll itself with ctypes; a plain .exe through the injector; ``--verify-load``
passing, failing on a planted NVIDIA driver, and Ctrl-C (130, the workload's output kept); a portable
Python without ``import site`` (nothing of ours can run in it: ``--verify-load`` proves nothing, exit 3).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.windows.report_lines import bindings, read_report, read_verified
from tests.windows.winpy import WinPython, torch_dir, winpath

pytestmark = pytest.mark.slow

# the rest of the fork's zip (fork 3.9.x): file -> -D flag of tests/fixtures/plan/win_stub.c
FORK_STUBS = {"cusparse.dll": "CUSPARSE", "cufft.dll": "CUFFT", "cufftw.dll": "CUFFTW", "nvrtc.dll": "NVRTC"}

TORCH_WORKLOAD = """\
import ctypes, os, sys
import torch
lib = os.path.join(os.path.dirname(torch.__file__), "lib")
tc = ctypes.CDLL(os.path.join(lib, "torch_cuda.dll"))
n = ctypes.c_int(-1)
print("workload: cudaGetDeviceCount ->", tc.torch_cuda_device_count(ctypes.byref(n)), flush=True)
print("workload: cublasCreate ->", tc.torch_cuda_blas(), flush=True)
"""

CTYPES_WORKLOAD = """\
import ctypes
drv = ctypes.WinDLL("nvcuda.dll")  # by name, before torch: Python 3.8+ never searches PATH for it
v = ctypes.c_int(0)
print("workload: cuDriverGetVersion ->", drv.cuDriverGetVersion(ctypes.byref(v)), v.value, flush=True)
"""

PLANTED_WORKLOAD = """\
import ctypes, sys
ctypes.WinDLL(sys.argv[1])  # NVIDIA's driver, loaded by full path beside ZLUDA's
import torch
print("workload: torch", torch.__version__, flush=True)
"""

INTERRUPTED_WORKLOAD = """\
import sys
import torch
print("workload: imported torch, now Ctrl-C", flush=True)
sys.stderr.write("workload: my own stderr line\\n")
raise KeyboardInterrupt
"""


def show(title: str, proc) -> None:  # type: ignore[no-untyped-def]
    print(f"\n===== {title} -> exit {proc.returncode}\n--- stdout\n{proc.stdout.rstrip()}\n--- stderr\n"
          f"{proc.stderr.rstrip()[-4000:]}")


@pytest.fixture(scope="module")
def fork(mingw_build, standin, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    """An unpacked fork-shaped release: reporting stand-ins for nvcuda.dll, nvml.dll and cublas.dll."""
    folder = tmp_path_factory.mktemp("fork") / "ZLUDA"
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
def workloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("workloads")
    for name, text in (("torch_workload.py", TORCH_WORKLOAD), ("ctypes_workload.py", CTYPES_WORKLOAD),
                       ("planted.py", PLANTED_WORKLOAD), ("interrupted.py", INTERRUPTED_WORKLOAD)):
        (folder / name).write_text(text)
    return folder


@pytest.fixture(scope="module")
def regular(new_cuda11_winpy) -> WinPython:  # type: ignore[no-untyped-def]
    py: WinPython = new_cuda11_winpy(portable=False)
    return py


def _run(py: WinPython, fork: Path, cache: Path, *args: str | Path, verify: bool = False):  # type: ignore[no-untyped-def]
    opts = ["--zluda-dir", winpath(fork), *(["--json", "--verify-load"] if verify else []), "run"]
    return py.zluda_run(*opts, *[winpath(a) if isinstance(a, Path) else a for a in args],
                        env={"ZLUDA_RUNNER_CACHE": winpath(cache)})


def _lib(py: WinPython) -> str:
    return winpath(torch_dir(py) / "lib")


def _not_found(proc) -> str:  # type: ignore[no-untyped-def]
    """The exception a workload died of: its traceback's last line, ``TYPE: message``."""
    assert proc.returncode == 1, proc.stderr
    return str(proc.stderr.strip().splitlines()[-1])


def test_torch_dll_loop_regular_python_uses_every_zluda_dll(regular: WinPython, fork: Path, workloads: Path,
                                                           tmp_path: Path) -> None:
    out = _run(regular, fork, tmp_path / "cache", regular.exe, workloads / "torch_workload.py")
    show("regular python, torch's DLL loop", out)
    assert out.returncode == 0, out.stderr
    lib = _lib(regular)
    seen = read_report(out.stdout)
    assert seen.modules_of("zluda nvcuda", "cuInit") == {f"{lib}\\nvcuda.dll"}
    assert seen.modules_of("zluda cublas", "cublasCreate_v2") == {f"{lib}\\cublas64_11.dll"}
    assert "workload: cublasCreate -> 0" in seen.other  # NVIDIA's stand-in would answer 42
    assert seen.sources() == {"zluda"}


def test_ctypes_workload_gets_the_driver_it_loads_by_name(regular: WinPython, fork: Path, workloads: Path,
                                                          tmp_path: Path) -> None:
    bare = regular.run([workloads / "ctypes_workload.py"])
    show("ctypes workload without zluda-run", bare)
    assert _not_found(bare).startswith("FileNotFoundError:") and "'nvcuda.dll'" in _not_found(bare)
    out = _run(regular, fork, tmp_path / "cache", regular.exe, workloads / "ctypes_workload.py")
    show("ctypes workload under zluda-run", out)
    assert out.returncode == 0, out.stderr
    seen = read_report(out.stdout)
    assert seen.modules_of("zluda nvcuda", "cuDriverGetVersion") == {f"{_lib(regular)}\\nvcuda.dll"}
    assert "workload: cuDriverGetVersion -> 0 12080" in seen.other


def test_plain_exe_runs_through_the_injector(regular: WinPython, fork: Path, nvidia_cudart, mingw_build,  # type: ignore[no-untyped-def]
                                             tmp_path: Path) -> None:
    app = tmp_path / "app"
    app.mkdir()
    shutil.copyfile(nvidia_cudart["cudart64_110.dll"], app / "cudart64_110.dll")
    shutil.copyfile(mingw_build(["windows/cudart_client.c"], "cudart_client.exe", shared=False),
                    app / "client.exe")
    plan = regular.zluda_run("--zluda-dir", winpath(fork), "plan", "--", winpath(app / "client.exe"),
                             env={"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache")})
    show("plan of a plain .exe", plan)
    assert "injector" in plan.stdout
    out = _run(regular, fork, tmp_path / "cache", app / "client.exe", "cudart64_110.dll", "-")
    show("plain .exe under zluda-run", out)
    assert out.returncode == 0, out.stderr
    seen = read_report(out.stdout)
    assert seen.modules_of("zluda nvcuda", "cuInit") == {f"{winpath(fork)}\\nvcuda.dll"}
    assert seen.in_process == (f"{winpath(fork)}\\nvcuda.dll",)
    # no Python in it: nothing of ours runs inside to list its modules, so --verify-load proves nothing
    blind = _run(regular, fork, tmp_path / "cache", app / "client.exe", "cudart64_110.dll", "-", verify=True)
    show("plain .exe, --verify-load", blind)
    seen, verified = read_verified(blind.stdout)
    assert "cuInit" in seen.functions("zluda nvcuda")
    assert blind.returncode == 3 and verified["unproven"] and not verified["ok"]
    assert verified["exit_code"] == 0


def test_verify_load_proves_each_module_and_fails_on_a_planted_driver(
        regular: WinPython, fork: Path, workloads: Path, standin, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ok = _run(regular, fork, tmp_path / "cache", regular.exe, workloads / "torch_workload.py", verify=True)
    show("--verify-load, torch workload", ok)
    assert ok.returncode == 0, ok.stderr
    lib = _lib(regular)
    _, verified = read_verified(ok.stdout)
    assert (verified["processes"], verified["unproven"], verified["ok"]) == (1, None, True)
    taken = bindings(verified)
    assert taken["nvcuda.dll"] == ("taken", f"{lib}\\nvcuda.dll")
    assert taken["cublas64_11.dll"] == ("taken", f"{lib}\\cublas64_11.dll")
    nvidia = tmp_path / "nvidia"
    nvidia.mkdir()
    shutil.copyfile(standin("nvidia nvcuda", "DRIVER", "nvcuda.dll", answer=42), nvidia / "nvcuda.dll")
    bad = _run(regular, fork, tmp_path / "cache", regular.exe, workloads / "planted.py",
               nvidia / "nvcuda.dll", verify=True)
    show("--verify-load, NVIDIA's driver planted", bad)
    seen, verified = read_verified(bad.stdout)
    assert seen.other == ("workload: torch 2.13.0+cpu",)  # the workload itself ran to its end
    assert bad.returncode == 3 and verified["exit_code"] == 0 and not verified["ok"]
    assert bindings(verified)["nvcuda.dll"] == ("not-taken", f"{winpath(nvidia)}\\nvcuda.dll")


def test_ctrl_c_during_verify_load_is_130_with_the_workload_output_kept(
        regular: WinPython, fork: Path, workloads: Path, tmp_path: Path) -> None:
    out = _run(regular, fork, tmp_path / "cache", regular.exe, workloads / "interrupted.py", verify=True)
    show("--verify-load, workload interrupted", out)
    assert out.returncode == 130
    seen, verified = read_verified(out.stdout)
    assert seen.other == ("workload: imported torch, now Ctrl-C",)  # the workload's stdout, all of it
    # the workload's own stderr, as it wrote it: the phrase is the workload's, passed through untouched
    assert "workload: my own stderr line" in out.stderr and "KeyboardInterrupt" in out.stderr
    assert verified["exit_code"] == 130 and verified["bindings"]


def test_portable_python_runs_through_its_pth_hook_and_restore_removes_it(
        new_cuda11_winpy, fork: Path, workloads: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    py: WinPython = new_cuda11_winpy(portable=True)
    cache = tmp_path / "cache"
    lib = torch_dir(py) / "lib"
    before = {p.name: p.read_bytes() for p in lib.iterdir() if p.is_file()}
    hook = py.site_packages / "zluda_runner_startup.pth"
    env = {"ZLUDA_RUNNER_CACHE": winpath(cache)}
    plan = py.zluda_run("--zluda-dir", winpath(fork), "plan", "--", winpath(py.exe), "x.py", env=env)
    show("plan, portable python", plan)
    assert plan.returncode == 0, plan.stderr
    assert "zluda_runner_startup.pth" in " ".join(plan.stdout.split())
    assert not hook.exists()  # plan writes nothing

    out = _run(py, fork, cache, py.exe, workloads / "ctypes_workload.py", verify=True)
    show("portable python, ctypes workload, --verify-load", out)
    assert out.returncode == 0, out.stderr
    seen, verified = read_verified(out.stdout)
    assert seen.modules_of("zluda nvcuda", "cuDriverGetVersion") == {f"{winpath(lib)}\\nvcuda.dll"}
    assert bindings(verified)["nvcuda.dll"] == ("taken", f"{winpath(lib)}\\nvcuda.dll")
    assert hook.read_text().startswith("# zluda-runner start-up hook")
    alone = py.run([workloads / "ctypes_workload.py"])  # without zluda-run the hook is inert
    assert _not_found(alone).startswith("FileNotFoundError:") and "'nvcuda.dll'" in _not_found(alone)

    torch_run = _run(py, fork, cache, py.exe, workloads / "torch_workload.py")
    show("portable python, torch workload", torch_run)
    assert torch_run.returncode == 0, torch_run.stderr
    served = read_report(torch_run.stdout).modules_of("zluda cublas", "cublasCreate_v2")
    assert served == {f"{winpath(lib)}\\cublas64_11.dll"}

    st = py.zluda_run("--json", "status", "--torch-lib", winpath(lib), env=env)
    show("status, portable python", st)
    assert st.returncode == 0 and json.loads(st.stdout)["hooks"] == [winpath(hook)], st.stdout

    restored = py.zluda_run("restore", "--torch-lib", winpath(lib), env=env)
    show("restore, portable python", restored)
    assert restored.returncode == 0, restored.stderr
    assert not hook.exists()
    after = {p.name: p.read_bytes() for p in lib.iterdir() if p.is_file()}
    assert after == before

    # the same interpreter with `import site` commented out: nothing of ours can run inside it
    pth = py.home / "python313._pth"
    pth.write_text(pth.read_text().replace("\nimport site", "\n#import site"))
    cache, env = tmp_path / "cache-no-site", {"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache-no-site")}
    no_site = py.zluda_run("--zluda-dir", winpath(fork), "--json", "plan", "--", winpath(py.exe), "x.py",
                           env=env)
    show("plan, portable python without import site", no_site)
    unhooked = json.loads(no_site.stdout)
    assert unhooked["startup_hook"] is None
    # the fix names the ._pth file to edit
    assert any(winpath(pth) in r for b in unhooked["bindings"] for r in b["reasons"]), unhooked["bindings"]
    blind = _run(py, fork, cache, py.exe, workloads / "torch_workload.py", verify=True)
    show("--verify-load, portable python without import site", blind)
    # torch's loop still loads the placed driver; only the proof is missing
    seen, verified = read_verified(blind.stdout)
    assert seen.modules_of("zluda nvcuda", "cuInit") == {f"{winpath(lib)}\\nvcuda.dll"}
    assert blind.returncode == 3 and verified["unproven"] and not verified["ok"]
    assert not hook.exists()



def test_warmup_runs_the_workload_under_the_plan(regular: WinPython, fork: Path, workloads: Path,
                                                 tmp_path: Path) -> None:
    warm = regular.zluda_run("--zluda-dir", winpath(fork), "warmup", "--", winpath(regular.exe),
                             winpath(workloads / "ctypes_workload.py"),
                             env={"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache")})
    show("warmup, ctypes workload", warm)
    assert warm.returncode == 0, warm.stderr
    served = read_report(warm.stdout).modules_of("zluda nvcuda", "cuDriverGetVersion")
    assert served == {f"{_lib(regular)}\\nvcuda.dll"}
    assert "exited 0 after" in warm.stdout
