"""The doctor on Windows asks for the GPUs what Windows has: HIP and the display adapters, never the Linux
tools ``rocminfo`` / ``rocm_agent_enumerator`` (on 3abffb6 its gpu check reported both "not found" there).
What was asked is data: the gpu check's ``details.asked`` holds the back ends' ids."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.doctor import DoctorOptions, Status, run_doctor
from zluda_runner.host.gpus import LINUX_TOOLS
from zluda_runner.host.hip import HipInfo


def _gpu(tmp_path: Path, platform: str, *, run_tools: bool) -> tuple[Status, list[str], list[str]]:
    report = run_doctor(DoctorOptions(root=tmp_path, env={}, platform=platform, home=Path("/home/u"),
                                      machine="AMD64" if platform == "win32" else "x86_64",
                                      hip_query=lambda: HipInfo(error="amdhip64_6.dll could not be loaded"),
                                      run_tools=run_tools))
    gpu = report.check("gpu")
    return gpu.status, gpu.details["asked"], report.facts.gpu_search


def test_windows_asks_hip_not_the_linux_tools(tmp_path: Path) -> None:
    status, asked, said = _gpu(tmp_path, "win32", run_tools=True)  # tools allowed: still none on Windows
    assert status is Status.FAIL and asked == ["hip"]  # (the registry is the host's: not under a fake root)
    assert not any(tool in line for tool in LINUX_TOOLS for line in said), said


def test_linux_asks_hip_then_the_kfd_topology(tmp_path: Path) -> None:
    status, asked, _said = _gpu(tmp_path, "linux", run_tools=False)
    assert status is Status.FAIL and asked == ["hip", "kfd"]
