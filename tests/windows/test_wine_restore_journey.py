"""The Windows user's journey (issue 29) on the real Windows CPython under Wine, zluda-runner installed
from its wheel, PyPI's real Windows torch 2.13.0 made a CUDA 11.8 build: ``place`` -> pip replaces a
placed DLL (a torch upgrade) -> ``status`` / ``restore`` / ``restore --force``; then an interrupted
``place`` and a restore stopped half-way by a DLL loaded after the check, each read back by ``status``.

On 7859508: ``restore`` exited 3 keeping the journal and ``zluda_runner_defaults.pth`` (a plain
``python`` kept ZLUDA's torch settings), ``restore --force`` put the pre-upgrade original over pip's
new DLL, and ``status`` blamed an antivirus and pip for what zluda-run had left half-done.
"""

# ruff: noqa: F811  (the fixtures are imported from the sibling test module, then requested by name)
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.windows.test_wine_defaults import APPLIED, NO_HIP, UNTOUCHED, _seen, fork, workload  # noqa: F401
from tests.windows.test_wine_files import holding
from tests.windows.winpy import WinPython, torch_dir, winpath

pytestmark = pytest.mark.slow

PIP_WRITES = ("import os, shutil, sys\n"  # what pip does to a file it installs: a new file renamed over
              "shutil.copyfile(sys.argv[1], sys.argv[2] + '.pip-tmp')\n"
              "os.replace(sys.argv[2] + '.pip-tmp', sys.argv[2])\n")
PLACE_AND_STOP = ("import json, sys\n"
                  "from pathlib import Path\n"
                  "from zluda_runner.launch.windows import Placement, place\n"
                  "ps = [Placement(Path(s), d, b) for s, d, b in json.loads(sys.argv[2])]\n"
                  "def stop(name):\n"
                  "    raise SystemExit(7)\n"
                  "place(Path(sys.argv[1]), ps, after_each=stop)\n")
RESTORE_UNCHECKED = ("import sys\n"
                     "from pathlib import Path\n"
                     "from zluda_runner.core.errors import FileInUseError\n"
                     "from zluda_runner.core.replace import no_locks\n"
                     "from zluda_runner.launch.windows.restoring import restore\n"
                     "try:\n"
                     "    restore(Path(sys.argv[1]), check=no_locks)\n"
                     "except FileInUseError:\n"
                     "    sys.exit(5)\n")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): sha(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def js(out) -> dict:  # type: ignore[no-untyped-def,type-arg]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    data: dict = json.loads(out.stdout)  # type: ignore[type-arg]
    return data


@pytest.fixture
def journey(new_cuda11_winpy, fork: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """An interpreter of each test's own (a copy: cheap), so that what a failing test leaves placed is
    never the next test's starting point."""
    py: WinPython = new_cuda11_winpy(portable=False)
    cache = tmp_path / "journey-cache"
    env = {"ZLUDA_RUNNER_CACHE": winpath(cache), **NO_HIP}

    def zr(*args: str):  # type: ignore[no-untyped-def]
        return py.zluda_run("--json", "--zluda-dir", winpath(fork), *args, "--torch-lib",
                            winpath(torch_dir(py) / "lib"), env=env)

    return py, torch_dir(py) / "lib", zr


def test_restore_after_pip_replaced_a_placed_dll_keeps_pip_s_file_and_removes_the_hooks(
        journey, standin, workload: Path) -> None:  # type: ignore[no-untyped-def]
    py, lib, zr = journey
    before = tree(lib)
    placed = zr("place")
    assert placed.returncode == 0, placed.stderr[-3000:]
    hook = py.site_packages / "zluda_runner_defaults.pth"
    assert hook.is_file() and _seen(py.run([workload], env=NO_HIP)) == APPLIED

    for version, argv in ((43, ["restore"]), (44, ["restore", "--force"])):
        if version == 44:  # the upgraded torch is the user's torch now: place on it, pip upgrades again
            before = tree(lib)
            assert zr("place").returncode == 0 and hook.is_file()
        upgraded = standin(f"torch upgraded cublas {version}", "CUBLAS", "cublas64_11.dll", answer=version)
        out = py.run(["-c", PIP_WRITES, winpath(upgraded), winpath(lib / "cublas64_11.dll")])
        assert out.returncode == 0, out.stderr

        st = zr("status")
        files = {f["name"]: f for f in js(st)["files"]}
        assert st.returncode == 3 and files["cublas64_11.dll"]["state"] == "changed"
        assert files["cublas64_11.dll"]["by"] == "other" and js(st)["quarantined"] == []

        out = zr(*argv)
        done = js(out)
        assert out.returncode == 0, out.stdout + out.stderr[-3000:]
        assert done["kept"] == ["cublas64_11.dll"] and done["complete"] is True
        assert sha(lib / "cublas64_11.dll") == sha(upgraded)  # pip's new DLL is not lost
        after = tree(lib)
        assert after == {**before, "cublas64_11.dll": sha(upgraded)}  # the rest is NVIDIA's again
        assert not (lib / ".zluda-runner").exists()  # nothing of zluda-run's is left to restore
        assert not hook.exists() and winpath(hook).lower() in [p.lower() for p in done["removed"]]
        if version == 43:  # a plain python: no ZLUDA settings (--force leaves the same hook-less folder)
            assert _seen(py.run([workload], env=NO_HIP)) == UNTOUCHED


def test_status_after_an_interrupted_place_and_a_restore_stopped_half_way_says_what_zluda_run_did(
        journey) -> None:  # type: ignore[no-untyped-def]
    py, lib, zr = journey
    before = tree(lib)
    assert zr("place").returncode == 0
    entries = json.loads((lib / ".zluda-runner" / "journal.json").read_text())["entries"]
    assert zr("restore").returncode == 0 and tree(lib) == before
    backups = {e["source"]: e["name"] for e in entries if e["kind"] == "backup"}
    wanted = [[e["source"], e["name"], backups.get(e["name"])] for e in entries if e["kind"] == "shim"]

    out = py.run(["-c", PLACE_AND_STOP, winpath(lib), json.dumps(wanted)])  # stops after the first file
    assert out.returncode == 7, out.stderr
    st = js(zr("status"))
    assert st["state"] == "in-progress" and st["quarantined"] == []
    by = {f["name"]: (f["state"], f["by"]) for f in st["files"]}
    assert by[entries[0]["name"]] == ("placed", None)
    assert {b for _s, b in list(by.values())[1:]} == {"placing"}, by  # not placed yet: not an antivirus
    assert zr("restore").returncode == 0 and tree(lib) == before

    assert zr("place").returncode == 0
    last = entries[0]["name"]  # restore goes last placed first: this one would be put back last
    with holding(py, lib / last):
        out = py.run(["-c", RESTORE_UNCHECKED, winpath(lib)])
        assert out.returncode == 5, out.stderr
    st = js(zr("status"))
    assert st["state"] == "restoring" and st["quarantined"] == []
    by = {f["name"]: (f["state"], f["by"]) for f in st["files"]}
    assert by[last] == ("placed", None)
    assert {b for n, (_s, b) in by.items() if n != last} == {"restoring"}, by  # put back: not pip's doing
    out = zr("restore")
    assert out.returncode == 0 and tree(lib) == before
