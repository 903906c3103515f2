"""A HIP variable naming a folder that is gone (an uninstalled HIP SDK leaves HIP_PATH behind) is said as
such by every command (issue 29): the doctor's ``rocm`` check (its ``missing_folders`` as data), the run's
and the plan's word about the host, and the plan's dependency fix; not "HIP_PATH unset" (3abffb6)."""

from __future__ import annotations

from pathlib import Path

from tests.doctor.test_doctor import _write
from zluda_runner.doctor import DoctorOptions, Status, run_doctor
from zluda_runner.host.hipversion import find_host_hip, gone_hip_folders
from zluda_runner.host.quick import hip_found, quick_facts

GONE = "C:\\Program Files\\AMD\\ROCm\\6.4\\"


def test_the_doctor_names_the_variable_and_its_missing_folder(tmp_path: Path) -> None:
    env = {"HIP_PATH": GONE, "HIP_PATH_64": GONE, "HIP_PATH_62": ""}
    report = run_doctor(DoctorOptions(root=tmp_path, env=env, platform="win32", machine="AMD64",
                                      home=Path("/Users/u")))
    rocm = report.check("rocm")
    assert rocm.status is Status.FAIL
    assert rocm.details["missing_folders"] == [{"variable": "HIP_PATH", "path": GONE},
                                               {"variable": "HIP_PATH_64", "path": GONE}]
    assert GONE in rocm.message and "HIP_PATH_64" in rocm.fix
    unset = run_doctor(DoctorOptions(root=tmp_path, env={}, platform="win32", machine="AMD64",
                                     home=Path("/Users/u"))).check("rocm")
    assert unset.status is Status.FAIL and "missing_folders" not in unset.details


def test_the_run_and_the_plan_say_it_too(tmp_path: Path) -> None:
    env = {"HIP_PATH": GONE}
    assert find_host_hip(tmp_path, env, "win32") is None
    assert gone_hip_folders(tmp_path, env, "win32") == [("HIP_PATH", GONE)]
    found = hip_found(env, tmp_path, "win32")
    assert found.version is None and GONE in found.text  # the nothing-fits message's "found"
    problems = quick_facts(env=env, root=tmp_path, platform="win32").problems
    assert len(problems) == 1 and GONE in problems[0]
    # a folder that is there is not gone; an empty variable names nothing
    _write(tmp_path, "Program Files/AMD/ROCm/6.4/bin/amdhip64_6.dll")
    assert gone_hip_folders(tmp_path, env, "win32") == []
    assert hip_found(env, tmp_path, "win32").version == "6.4"
    assert gone_hip_folders(tmp_path, {"HIP_PATH": ""}, "win32") == []
    # Linux reads ROCM_PATH and HIP_PATH first, alike
    linux = {"ROCM_PATH": "/opt/rocm-9.9.9"}
    assert gone_hip_folders(tmp_path, linux, "linux") == [("ROCM_PATH", "/opt/rocm-9.9.9")]
    assert "/opt/rocm-9.9.9" in quick_facts(env=linux, root=tmp_path, platform="linux").problems[-1]
