"""Placement where the user's Python is (issue 29), on the official Windows CPython under Wine with PyPI's
real Windows torch 2.13.0 made a CUDA 11.8 build, zluda-runner installed from its wheel:

- a torch\\lib this user may not write (a Python under Program Files; here made read-only as
  tests/launch/test_restore_no_space.py does it): ``place`` is refused with a ``not-writable`` error naming
  the folder, nothing changed (on 3abffb6: a PermissionError traceback from the journal folder's mkdir);
- a Python whose torch\\lib path is over 260 characters: Wine's ``os.path.realpath`` raises
  ``OSError: [WinError 234]`` there (measured below), which stopped zluda-run at import on 3abffb6; plan,
  place, status, restore and a launch now work;
- ``--zluda-dir`` on a fork-shaped folder that is no manifest zip (nvcuda, nvml, cublas, cusparse,
  zluda.exe): the fork's names are mapped by file name (on 3abffb6: FATAL, cublas64_11.dll missing).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.launch.test_restore_no_space import _read_only
from tests.windows.test_wine_defaults import NO_HIP, fork  # noqa: F401
from tests.windows.winpy import WinPython, make_python, make_torch_cuda_shaped, torch_dir, winpath

pytestmark = pytest.mark.slow


def tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def js(out) -> dict:  # type: ignore[no-untyped-def,type-arg]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    data: dict = json.loads(out.stdout)  # type: ignore[type-arg]
    return data


def test_place_into_a_torch_lib_it_cannot_write_is_a_clear_error_and_changes_nothing(  # type: ignore[no-untyped-def]
        new_cuda11_winpy, fork: Path, tmp_path: Path) -> None:  # noqa: F811
    py: WinPython = new_cuda11_winpy(portable=False)
    lib = torch_dir(py) / "lib"
    env = {"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache"), **NO_HIP}
    before = tree(py.site_packages)
    for read_only in (lib, py.site_packages):  # torch\lib; then only site-packages (the defaults hook)
        with _read_only(read_only):
            out = py.zluda_run("--json", "--zluda-dir", winpath(fork), "place", "--torch-lib", winpath(lib),
                               env=env)
            text = py.zluda_run("--zluda-dir", winpath(fork), "place", "--torch-lib", winpath(lib), env=env)
        error = js(out)
        assert (out.returncode, error["kind"], error["exit_code"]) == (1, "not-writable", 1), error
        assert error["details"]["folder"].lower() == winpath(read_only).lower(), error
        assert winpath(read_only).lower() in error["hint"].lower(), error  # the folder to fix
        assert tree(py.site_packages) == before and not (lib / ".zluda-runner").exists()
        assert text.returncode == 1 and "Traceback" not in text.stderr, text.stderr[-3000:]
        assert text.stderr.startswith("error: ") and "\nhint: " in text.stderr, text.stderr
    out = py.zluda_run("--json", "--zluda-dir", winpath(fork), "place", "--torch-lib", winpath(lib), env=env)
    assert out.returncode == 0 and js(out)["placement"]["placed"], out.stdout + out.stderr[-3000:]
    assert py.zluda_run("restore", "--torch-lib", winpath(lib), env=env).returncode == 0
    assert tree(py.site_packages) == before


def test_wine_realpath_fails_over_260_characters_and_zluda_run_works_there(  # type: ignore[no-untyped-def]
        wine_env, win_wheels: Path, project_wheel: Path, cuda11_torch_dlls: dict[str, Path], fork: Path,  # noqa: F811
        tmp_path: Path) -> None:
    # python.exe itself starts only below 260 characters (its getpath joins, Windows' MAX_PATH: "failed to
    # join paths"): the interpreter's folder at 236, its torch\lib beyond 260, as a deep ComfyUI folder has it
    home = tmp_path
    while len(winpath(home / "python")) < 236:
        home = home / ("d" * min(60, 236 - len(winpath(home / "python")) - 1 or 1))
    home = home / "python"
    home.parent.mkdir(parents=True)
    py = make_python(wine_env, win_wheels, project_wheel, home, portable=False, torch=True)
    make_torch_cuda_shaped(py.site_packages / "torch", "11.8", cuda11_torch_dlls)
    lib = torch_dir(py) / "lib"
    assert len(winpath(lib)) > 260
    # what Wine does (measured, so the work-around stays needed): realpath fails, the file work does not
    probe = ("import os, sys\n"
             "p = sys.argv[1]\n"
             "try:\n"
             "    os.path.realpath(p)\n"
             "except OSError as exc:\n"
             "    print('realpath', getattr(exc, 'winerror', None))\n"
             "print('listdir', len(os.listdir(p)) > 0)\n")
    seen = py.run(["-c", probe, winpath(lib)])
    assert seen.stdout.split() == ["realpath", "234", "listdir", "True"], seen.stdout + seen.stderr

    env = {"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache"), **NO_HIP}
    before = tree(lib)
    base = ["--json", "--zluda-dir", winpath(fork)]
    plan = py.zluda_run(*base, "plan", "--", winpath(py.exe), "x.py", env=env)
    assert plan.returncode == 0 and js(plan)["verdict"] != "fatal", plan.stdout + plan.stderr[-3000:]
    placed = py.zluda_run(*base, "place", "--torch-lib", winpath(lib), env=env)
    assert placed.returncode == 0 and js(placed)["placement"]["placed"], placed.stdout + placed.stderr[-3000:]
    assert tree(lib)["cublas64_11.dll"] == tree(fork)["cublas.dll"]
    status = py.zluda_run("--json", "status", "--torch-lib", winpath(lib), env=env)
    assert status.returncode == 0 and js(status)["state"] == "placed", status.stdout + status.stderr[-3000:]
    # the launch (torch itself is not imported: its own inspect.getmodule calls realpath there, and fails)
    ran = py.zluda_run("--zluda-dir", winpath(fork), "run", "--", winpath(py.exe), "-c", "print('ok')",
                       env=env)
    assert ran.returncode == 0 and ran.stdout.split()[-1:] == ["ok"], ran.stdout + ran.stderr[-3000:]
    restored = py.zluda_run("--json", "restore", "--torch-lib", winpath(lib), env=env)
    assert restored.returncode == 0 and js(restored)["complete"], restored.stdout + restored.stderr[-3000:]
    assert tree(lib) == before


def test_zluda_dir_on_a_fork_folder_that_is_no_manifest_zip_maps_the_fork_names(  # type: ignore[no-untyped-def]
        new_cuda11_winpy, fork: Path, tmp_path: Path) -> None:  # noqa: F811
    py: WinPython = new_cuda11_winpy(portable=False)
    lib = torch_dir(py) / "lib"
    trimmed = tmp_path / "ZLUDA"
    trimmed.mkdir()
    for name in ("nvcuda.dll", "nvml.dll", "cublas.dll", "cusparse.dll", "zluda.exe"):
        shutil.copyfile(fork / name, trimmed / name)
    env = {"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache"), **NO_HIP}
    before = tree(lib)
    base = ["--json", "--zluda-dir", winpath(trimmed)]
    plan = js(py.zluda_run(*base, "plan", "--", winpath(py.exe), "x.py", env=env))
    assert plan["verdict"] != "fatal", plan
    shims = {b["need"]: b["shim"] for b in plan["bindings"] if b.get("shim")}
    assert shims["cublas64_11.dll"].lower() == winpath(trimmed / "cublas.dll").lower(), shims
    out = py.zluda_run(*base, "place", "--torch-lib", winpath(lib), env=env)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    after = tree(lib)
    assert after["cublas64_11.dll"] == tree(trimmed)["cublas.dll"]
    assert py.zluda_run("restore", "--torch-lib", winpath(lib), env=env).returncode == 0
    assert tree(lib) == before
