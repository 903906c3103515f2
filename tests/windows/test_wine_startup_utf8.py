"""zluda-run's own lines inside a Windows workload are UTF-8 under a pipe, as the rest of its output
(issue 29), on the official Windows CPython under Wine, whose stderr to a pipe is cp1252 with
backslashreplace (measured: ``\\u0414`` for Д). On 3abffb6 the start-up code wrote them in that code page:
a path under a Cyrillic user name came out as ``\\u0414...``. Two of its lines: the preload's failure
(the start-up code a launch puts first on PYTHONPATH), and the warning of the placed-defaults ``.pth``
hook (``zluda-run place``) when torch refuses a default (a stand-in ``torch`` first on PYTHONPATH, whose
``enable_flash_sdp`` raises: the hook and the stream are what is checked, not torch)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.windows.test_wine_defaults import NO_HIP, fork  # noqa: F401
from tests.windows.winpy import WinPython, torch_dir, winpath

pytestmark = pytest.mark.slow

USER = "Дмитрий_ユーザー"
REFUSING_TORCH = ("class _Cuda:\n"
                  "    @staticmethod\n"
                  "    def enable_flash_sdp(flag):\n"
                  f"        raise RuntimeError({USER!r})\n"
                  "class backends:\n"
                  "    cuda = _Cuda\n")


def test_the_preload_failure_line_is_utf8(winpy: WinPython, tmp_path: Path) -> None:
    write = ("import sys\nfrom pathlib import Path\n"
             "from zluda_runner.launch.windows.preload import write_preload\n"
             "print(write_preload(Path(sys.argv[1])))\n")
    folder = winpy.run(["-c", write, winpath(tmp_path / "cache")])
    assert folder.returncode == 0, folder.stderr
    dll = tmp_path / USER / "nvcuda.dll"  # not there: the preload fails and says so
    out = winpy.run(["-c", "print('ran')"], env={"PYTHONPATH": folder.stdout.strip(),
                                                 "ZLUDA_RUNNER_PRELOAD": winpath(dll)})
    assert out.returncode == 0 and out.stdout == "ran\n", out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("zluda-run: ")]
    assert len(lines) == 1 and winpath(dll) in lines[0], out.stderr  # decoded as UTF-8: the name whole


def test_the_placed_defaults_hook_warning_is_utf8(new_cuda11_winpy, fork: Path,  # type: ignore[no-untyped-def]  # noqa: F811
                                                  tmp_path: Path) -> None:
    py: WinPython = new_cuda11_winpy(portable=False)
    lib = torch_dir(py) / "lib"
    env = {"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache"), **NO_HIP}
    placed = py.zluda_run("--json", "--zluda-dir", winpath(fork), "place", "--torch-lib", winpath(lib),
                          env=env)
    assert placed.returncode == 0 and json.loads(placed.stdout)["defaults_hook"], placed.stderr[-3000:]
    stand_in = tmp_path / "stand-in" / "torch"
    stand_in.mkdir(parents=True)
    (stand_in / "__init__.py").write_text(REFUSING_TORCH, encoding="utf-8")
    out = py.run(["-c", "import torch; print('ran')"], env={**NO_HIP, "PYTHONPATH": winpath(stand_in.parent)})
    assert out.returncode == 0 and out.stdout == "ran\n", out.stderr  # the workload goes on
    lines = [line for line in out.stderr.splitlines() if line.startswith("zluda-run: ")]
    assert len(lines) == 1 and USER in lines[0], out.stderr
    assert py.zluda_run("restore", "--torch-lib", winpath(lib), env=env).returncode == 0
