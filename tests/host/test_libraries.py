"""One host-library finder (issue 27 point 3): the plan's dependency check, the ``cudnn-off`` default and the
doctor say the same of MIOpen for the same environment, and what was searched when it is absent. The host
is a fake tree (ZLUDA_RUNNER_ROOT) holding real ELF files; the real ld.so confirms the file it takes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import put_elf
from tests.doctor.test_doctor import _write
from tests.plan.test_defaults import _plan
from zluda_runner.doctor import DoctorOptions, Status, run_doctor
from zluda_runner.host.fs import HostFs
from zluda_runner.host.libraries import LOADER_HOWS, NOT_FOUND, ROCM_FOLDER, find_library, kernel_folder
from zluda_runner.loader.glibc import DEFAULT_INTERPRETER
from zluda_runner.plan.defaults import CUDNN_OFF, compute_defaults
from zluda_runner.plan.defaults_facts import gather_facts
from zluda_runner.plan.hostread import read_host
from zluda_runner.plan.shimdeps import resolve_shim_deps

MIOPEN = "libMIOpen.so.1"


def _host(root: Path) -> Path:
    """Debian's packaged HIP 5.2 in the system folder (the install find_rocm picks) and MIOpen in a ROCm
    folder of the user's own, named only by LD_LIBRARY_PATH."""
    _write(root, "usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153")
    put_elf(root / "home/u/rocm/lib" / MIOPEN)
    return root


def _answers(root: Path, env: dict[str, str], shim: Path, tmp_path: Path) -> tuple[object, ...]:
    deps = resolve_shim_deps([str(shim)], env)
    facts = gather_facts(_plan(), read_host(env, "linux"), env, enabled=True, manifest=None)
    cudnn = next((d for d in compute_defaults(facts) if d.name == CUDNN_OFF), None)
    given = {k: v for k, v in env.items() if k != "ZLUDA_RUNNER_ROOT"}
    doctor = run_doctor(DoctorOptions(root=root, env=given, platform="linux", machine="x86_64",
                                      home=Path("/home/u")))
    return deps, facts, cudnn, doctor.check("miopen")


def test_miopen_on_ld_library_path_is_one_answer_for_plan_defaults_and_doctor(
        cc_build, tmp_path: Path) -> None:
    root = _host(tmp_path / "host")
    real_dir = root / "home/u/rocm/lib"
    shim = cc_build(["elf/plain.c"], "libcudnn.so",
                    args=["-Wl,--no-as-needed", f"-L{real_dir}", f"-l:{MIOPEN}"])
    env = {"ZLUDA_RUNNER_ROOT": str(root), "LD_LIBRARY_PATH": "/home/u/rocm/lib"}
    lib = find_library(MIOPEN, env, "linux", fs=HostFs(root))
    assert (lib.path, lib.how) == (f"/home/u/rocm/lib/{MIOPEN}", "LD_LIBRARY_PATH")
    assert lib.real == str(real_dir / MIOPEN)
    deps, facts, cudnn, miopen = _answers(root, env, shim, tmp_path)
    assert not deps.problems and deps.library_path == [str(real_dir)]  # the tree's folder, for the launch
    assert facts.miopen == lib.path  # 7859508: None, "looked for /usr/lib/x86_64-linux-gnu/libMIOpen.so*"
    assert cudnn is not None and "no MIOpen" not in cudnn.reason  # off only for the release's missing cuDNN
    assert miopen is not None and miopen.status is Status.OK and lib.path in miopen.message
    # the real ld.so takes the very file, with the folder the plan adds
    listed = subprocess.run([DEFAULT_INTERPRETER, "--list", str(shim)], capture_output=True, text=True,
                            env={"LD_LIBRARY_PATH": ":".join(deps.library_path)}, timeout=30, check=False)
    assert f"{MIOPEN} => {real_dir / MIOPEN}" in listed.stdout, listed.stdout

    (real_dir / MIOPEN).unlink()
    gone = find_library(MIOPEN, env, "linux", fs=HostFs(root))
    assert gone.how == NOT_FOUND and "LD_LIBRARY_PATH /home/u/rocm/lib" in gone.looked
    deps, facts, cudnn, miopen = _answers(root, env, shim, tmp_path)
    searched = gone.searched()
    assert searched in deps.problems[str(shim)][0]
    assert facts.miopen is None and cudnn is not None and searched in cudnn.reason
    assert miopen is not None and miopen.status is Status.WARN and searched in miopen.message


def test_rocm_folders_are_found_but_not_on_the_loaders_path(tmp_path: Path) -> None:
    put_elf(tmp_path / "opt/rocm/lib/librocblas.so")
    _write(tmp_path, "opt/rocm/lib/libMIOpen.so.1")  # not an ELF file: ld.so would not take it
    fs = HostFs(tmp_path)
    rocblas = find_library("librocblas.so", {}, "linux", fs=fs)
    assert (rocblas.path, rocblas.how) == ("/opt/rocm/lib/librocblas.so", ROCM_FOLDER)
    assert ROCM_FOLDER not in LOADER_HOWS and not rocblas.loads_as_is
    assert kernel_folder(str(rocblas.path), "rocblas") == "/opt/rocm/lib/rocblas/library"
    assert find_library("libMIOpen.so.1", {}, "linux", fs=fs).how == NOT_FOUND


def test_windows_path_system32_then_the_hip_sdk_bin(tmp_path: Path) -> None:
    sdk = "Program Files/AMD/ROCm/6.4"
    _write(tmp_path, f"{sdk}/bin/MIOpen.dll")
    _write(tmp_path, "Windows/System32/rocblas.dll")
    env = {"HIP_PATH": "C:\\Program Files\\AMD\\ROCm\\6.4\\", "SystemRoot": "C:\\Windows",
           "PATH": "C:\\tools"}
    fs = HostFs(tmp_path)
    miopen = find_library("miopen.dll", env, "win32", fs=fs)
    assert (miopen.path, miopen.how) == ("C:\\Program Files\\AMD\\ROCm\\6.4\\bin\\MIOpen.dll", "HIP SDK bin")
    assert miopen.looked[:3] == ("C:\\Windows\\System32", "C:\\Windows", "C:\\tools")
    on_path = find_library("MIOpen.dll", {**env, "PATH": "C:\\tools;C:\\Program Files\\AMD\\ROCm\\6.4\\bin"},
                           "win32", fs=fs)
    assert on_path.how == "PATH"
    assert find_library("rocblas.dll", env, "win32", fs=fs).how == "System32"
    kernels = kernel_folder(str(miopen.path), "rocblas")
    assert kernels == "C:\\Program Files\\AMD\\ROCm\\6.4\\bin\\rocblas\\library"
