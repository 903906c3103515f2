"""Issue 20's first-contact fixes on the official Windows CPython under Wine (zluda-runner from its wheel).

The host fact is an input: a HIP SDK folder named ``5.5`` given as ``HIP_PATH`` (the SDK installs into
``ROCm\\X.Y``), too old for every fork build; the target is PyPI's real Windows torch 2.13.0 made a
CUDA 11.8 build (``new_cuda11_winpy``), which the fork serves and upstream v5 (CUDA 12 only) does not.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.golden import assert_golden
from tests.windows.winpy import WinPython

NO_HIP = {"HIP_PATH": "", "HIP_PATH_57": "", "HIP_PATH_62": "", "HIP_PATH_64": ""}


def _hip55(py: WinPython, tmp_path: Path) -> dict[str, str]:
    sdk = tmp_path / "AMD" / "ROCm" / "5.5"
    (sdk / "bin").mkdir(parents=True)
    cache = py.winpath(tmp_path / "cache")
    return {**NO_HIP, "HIP_PATH": py.winpath(sdk) + "\\", "ZLUDA_RUNNER_CACHE": cache}


def test_nothing_fits_on_windows_one_short_message_exit_3_everywhere(  # type: ignore[no-untyped-def]
        new_cuda11_winpy, tmp_path: Path) -> None:
    py: WinPython = new_cuda11_winpy(portable=False)
    env = _hip55(py, tmp_path)
    plan = py.zluda_run("plan", env=env)
    assert plan.returncode == 3, plan.stdout + plan.stderr
    err = plan.stderr
    # the whole message (found, what each release needs, the ways there, --zluda-dir), unwrapped: piped
    assert_golden("wine-first-contact-nothing-fits", err.replace(py.winpath(tmp_path), "<tmp>"))
    run = py.zluda_run(py.winpath(py.exe), "-c", "print('never')", env=env)
    assert run.returncode == 3 and "never" not in run.stdout and run.stderr == err, run.stderr
    as_json = json.loads(py.zluda_run("--json", "plan", env=env).stdout)
    assert (as_json["kind"], as_json["exit_code"]) == ("nothing-fits", 3), as_json
    doctor = json.loads(py.zluda_run("--json", "doctor", env=env).stdout)
    release = next(c for c in doctor["checks"] if c["id"] == "release")
    assert release["status"] == "fail"  # the run's own verdict, in the run's words
    assert release["message"] == as_json["error"]
    # the same ways, less the run's pointer to the doctor (inside the doctor it would point to itself)
    ways, doctor_ways = as_json["hint"].split("\n  "), release["fix"].split("\n  ")
    assert doctor_ways[:-1] == ways[:-1] and doctor_ways[-1] in ways[-1]
    assert ways[-1] != doctor_ways[-1]  # the run's last way goes on to point to the doctor
    listed = py.zluda_run("releases", "--json", env=env)  # bare: this host's HIP and this torch's CUDA
    assert listed.returncode == 3, listed.stderr
    data = json.loads(listed.stdout)
    assert data["constraints"]["os"] == "windows" and data["constraints"]["hip"] == "5.5"
    assert data["constraints"]["cuda"] == 11 and data["selected"] is None


def test_strict_first_and_ab_without_b_python_under_windows(winpy: WinPython, tmp_path: Path) -> None:
    release = tmp_path / "zluda"
    release.mkdir()
    marker = tmp_path / "ran.txt"
    code = f"open({winpy.winpath(marker)!r}, 'w').write('x')"
    for args in (["--strict", winpy.winpath(winpy.exe), "-c", code],
                 ["--strict", "--", winpy.winpath(winpy.exe), "-c", code]):
        proc = winpy.zluda_run("--json", "--zluda-dir", winpy.winpath(release), *args, env=NO_HIP)
        assert proc.returncode == 3, proc.stderr
        refusal = json.loads(proc.stdout)
        assert (refusal["kind"], refusal["exit_code"]) == ("check-failed", 3), refusal
        assert "HIP" in refusal["error"], refusal  # the host's problem: no HIP SDK
        assert not marker.exists()
    script = tmp_path / "s.py"
    script.write_text(code + "\n")
    missing = winpy.winpath(tmp_path / "nope" / "python.exe")
    ab = winpy.zluda_run("--json", "ab", "--b-python", missing, "--", winpy.winpath(script), env=NO_HIP)
    assert ab.returncode == 1, ab.stderr
    error = json.loads(ab.stdout)
    assert (error["kind"], error["exit_code"]) == ("host", 1) and missing in error["error"], error
    assert not marker.exists()
