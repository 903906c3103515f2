"""The public API on the official Windows CPython under Wine (zluda-runner installed from its wheel):
``import zluda_runner as zr`` is cheap, plans for a cu118 torch/lib (PyPI's real torch made CUDA-11.8
shaped), and ``zr.placed`` places the fork's DLLs through Windows' own file replacement and puts back
every file byte for byte; the wheel ships ``py.typed``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.windows.winpy import WinPython, torch_dir

# the fork's zip (fork-3.9.5 ZLUDA-windows-rocm6-amd64.zip): file -> -D flag of tests/fixtures/plan/win_stub.c
FORK_FILES = {"nvcuda.dll": "DRIVER", "nvml.dll": "NVML", "cublas.dll": "CUBLAS", "cusparse.dll": "CUSPARSE",
              "cufft.dll": "CUFFT", "cufftw.dll": "CUFFTW", "nvrtc.dll": "NVRTC"}

SCRIPT = r"""
import hashlib, json, pathlib, sys
import zluda_runner as zr
light = sorted(m for m in sys.modules if m.startswith("zluda_runner."))
lib, fork, cache = (pathlib.Path(a) for a in sys.argv[1:4])
options = zr.Options(zluda_dir=fork, cache_dir=cache)
def files():  # every file of torch/lib by content, and what site-packages holds (a .pth hook?)
    site = lib.parent.parent
    return ({str(p.relative_to(lib)): hashlib.sha256(p.read_bytes()).hexdigest() for p in lib.rglob("*")
             if p.is_file()}, sorted(p.name for p in site.iterdir()))
before = files()
plan = zr.plan_command(options=options, torch_lib=lib)
out = {"light": light, "os": plan.os, "fatal": [b.need for b in plan.fatal],
       "placements": sorted(p.dest_name for p in plan.placements)}
with zr.placed(lib, options) as done:
    out["placed"] = sorted(done.placed)
    out["cublas_is_zluda"] = (lib / "cublas64_11.dll").read_bytes() == (fork / "cublas.dll").read_bytes()
    out["state"] = zr.placement_status(lib).state
out["state_after"] = zr.placement_status(lib).state
out["identical_after"] = files() == before
try:
    zr.place(lib / "missing", options)
except zr.ZludaRunnerError as exc:
    out["error"] = [type(exc).__name__, exc.hint]
out["py_typed"] = (pathlib.Path(zr.__file__).parent / "py.typed").is_file()
print(json.dumps(out))
"""


def test_the_api_plans_places_and_restores_on_windows(new_cuda11_winpy, mingw_build,  # type: ignore[no-untyped-def]
                                                      tmp_path: Path) -> None:
    py: WinPython = new_cuda11_winpy(portable=False)
    fork = tmp_path / "ZLUDA"
    fork.mkdir()
    for name, flag in FORK_FILES.items():
        shutil.copy2(mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}"]), fork / name)
    for name in ("zluda.exe", "zluda_redirect.dll"):  # what tells the fork's zip from another folder
        (fork / name).write_bytes(b"MZ")
    script = tmp_path / "api_check.py"
    script.write_text(SCRIPT)
    lib = torch_dir(py) / "lib"
    out = py.run([py.winpath(script), py.winpath(lib), py.winpath(fork), py.winpath(tmp_path / "cache")])
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["light"] == []  # import zluda_runner imported nothing else
    assert result["os"] == "windows" and result["fatal"] == []
    assert "cublas64_11.dll" in result["placements"] and "cublas64_11.dll" in result["placed"]
    assert result["cublas_is_zluda"] and result["state"] == "placed" and result["state_after"] == "none"
    assert result["identical_after"]  # every file of torch/lib byte for byte as before, site-packages too
    assert result["error"][0] == "TargetError" and "--" not in result["error"][1]
    assert result["py_typed"]
