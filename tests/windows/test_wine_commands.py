"""The read-only commands on the official Windows CPython under Wine: each exits as documented.

Host facts here are Wine's (no AMD GPU, no HIP SDK): the doctor must say so and exit 3 (a check
failed), not crash; ``releases`` and ``inspect`` read the packaged manifest and the interpreter's
own torch (PyPI's real Windows torch 2.13.0 wheel).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.windows.winpy import WinPython, make_torch_cuda_shaped, torch_dir, winpath
from zluda_runner.host.hip import WINDOWS_LIBRARIES

NO_HIP = {"HIP_PATH": "", "HIP_PATH_57": "", "HIP_PATH_62": "", "HIP_PATH_64": ""}


def test_doctor_on_windows_finds_no_gpu_and_exits_3(winpy: WinPython) -> None:
    out = winpy.zluda_run("doctor", "--json", env=NO_HIP)
    assert out.returncode == 3, out.stderr
    report = json.loads(out.stdout)
    checks = {c["id"]: c for c in report["checks"]}
    assert checks["platform"]["status"] == "ok" and "windows" in checks["platform"]["message"]
    hip = checks["hip_runtime"]
    # every HIP runtime major looked for, newest first, and none found: the record is the last one's
    assert hip["status"] == "fail" and hip["details"]["library"]["name"] == WINDOWS_LIBRARIES[-1], hip
    assert hip["details"]["library"]["path"] is None, hip
    text = winpy.zluda_run("doctor", env=NO_HIP)
    assert text.returncode == 3 and "Traceback" not in text.stderr
    assert all(f"{c['id']}:" in text.stdout for c in report["checks"]), text.stdout  # every check shown


def test_releases_lists_the_windows_builds(winpy: WinPython) -> None:
    out = winpy.zluda_run("releases", "--os", "windows", "--json")
    assert out.returncode in (0, 3), out.stderr  # 3: nothing fits this host (no HIP SDK under Wine)
    listed = json.loads(out.stdout)
    names = {a["name"] for r in listed["releases"] for a in r["assets"]}
    assert any(n.startswith("ZLUDA-windows") for n in names)  # the fork
    assert any(n.startswith("zluda-windows") for n in names)  # upstream


# the command line as python.exe -m zluda_runner starts it, writing at exit the modules it imported
MODULES_AT_EXIT = ("import atexit, sys\nout = sys.argv.pop(1)\n"
                   "atexit.register(lambda: open(out, 'w').write('\\n'.join(sorted(sys.modules))))\n"
                   "from zluda_runner.cli import main\nmain()\n")


def test_releases_said_again_is_replayed_from_its_memo(winpy: WinPython, tmp_path: Path) -> None:
    """On the real Windows CPython (this host's registry read as an observation, the interpreter's own torch
    read in-process): the first ``releases`` is derived and remembered in the cache's commands/, the second
    says the same bytes with the same exit code without importing click (commands/commandmemo)."""
    env = {**NO_HIP, "ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache")}
    modules = tmp_path / "modules.txt"
    for words in (["releases"], ["releases", "--json"]):
        runs = []
        for _ in range(2):
            out = winpy.run(["-c", MODULES_AT_EXIT, winpath(modules), *words], env=env)
            runs.append((out.stdout, out.stderr, out.returncode, "click" in modules.read_text().split("\n")))
        assert runs[0][2] in (0, 3) and "Traceback" not in runs[0][1], runs[0]
        assert runs[0][3] and not runs[1][3], runs  # derived (click), then replayed (no click)
        assert runs[1][:3] == runs[0][:3]
    assert len(list((tmp_path / "cache" / "commands").glob("*.memo"))) == 2


def test_inspect_reads_the_real_windows_torch(new_winpy, cuda11_torch_dlls) -> None:  # type: ignore[no-untyped-def]
    py: WinPython = new_winpy(portable=False, torch=True)
    cpu = py.zluda_run("inspect", "--json")  # PyPI's Windows torch is a CPU build: nothing to shim
    assert cpu.returncode == 1 and "Traceback" not in cpu.stderr
    error = json.loads(cpu.stdout)
    assert (error["kind"], error["exit_code"]) == ("target", 1) and "2.13.0+cpu" in error["error"], error
    make_torch_cuda_shaped(torch_dir(py), "11.8", cuda11_torch_dlls)
    out = py.zluda_run("inspect", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    profile = json.loads(out.stdout)
    assert profile["os"] == "windows" and profile["python"].lower().endswith("python.exe")
    assert profile["torch"]["version"] == "2.13.0+cpu" and profile["cuda_major"] == 11
    needs = {lib["name"]: lib["requested_by"] for lib in profile["libraries"]}
    assert "cudart64_110.dll" in needs and "cublas64_11.dll" in needs, needs
    assert profile["startup"]["pth_file"] is None and profile["startup"]["honours_pythonpath"] is True


def test_inspect_says_a_portable_python_ignores_pythonpath(new_cuda11_winpy) -> None:  # type: ignore[no-untyped-def]
    py: WinPython = new_cuda11_winpy(portable=True)
    out = py.zluda_run("inspect", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    startup = json.loads(out.stdout)["startup"]
    assert startup["pth_file"].lower().endswith("python313._pth")
    assert startup["honours_pythonpath"] is False and startup["site_enabled"] is True
