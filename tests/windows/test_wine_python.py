"""The test platform itself: the official Windows CPython under Wine runs zluda-runner as installed."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.commands.test_helptext import CLICK_SIDE, FAST_SIDE
from tests.windows.winpy import WinPython


def test_regular_layout_honours_pythonpath_and_runs_zluda_runner(winpy: WinPython, tmp_path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "marker_mod.py").write_text("X = 1\n")
    code = "import sys, marker_mod, zluda_runner; print(sys.platform, zluda_runner.__file__)"
    probe = winpy.run(["-c", code],
                      env={"PYTHONPATH": winpy.winpath(extra)})
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith("win32 ") and winpy.winpath(winpy.site_packages) in probe.stdout


def test_portable_layout_ignores_pythonpath(winpy_portable: WinPython, tmp_path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "marker_mod.py").write_text("X = 1\n")
    probe = winpy_portable.run(["-c", "import marker_mod"], env={"PYTHONPATH": winpy_portable.winpath(extra)})
    died_of = probe.stderr.strip().splitlines()[-1]  # the traceback's last line: TYPE: message
    assert probe.returncode == 1 and died_of.startswith("ModuleNotFoundError:") and "'marker_mod'" in died_of
    ok = winpy_portable.run(["-c", "import zluda_runner"])
    assert ok.returncode == 0, ok.stderr


def _raw(py: WinPython, args: list[str]) -> subprocess.CompletedProcess[bytes]:
    """``python.exe ARGS``, its output's bytes as they come (CRLF and all)."""
    return subprocess.run([py.wine.exe, str(py.exe), *args], cwd=py.home, env=py.wine.env({"COLUMNS": "100"}),
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=300, check=False)


@pytest.mark.parametrize("word", ["--help", "--version"])
def test_help_is_click_s_page_without_click(winpy: WinPython, word: str) -> None:
    """``zluda-run --help`` on Windows: the bytes click writes for its group (CRLF line ends), written
    without importing click (issue 28: --help at the interpreter's floor under Wine)."""
    fast = _raw(winpy, ["-c", FAST_SIDE, word])
    theirs = _raw(winpy, ["-c", CLICK_SIDE, word])
    code, modules = json.loads(fast.stderr)
    assert (code, theirs.returncode) == (0, 0), theirs.stderr
    assert fast.stdout == theirs.stdout and fast.stdout.endswith(b"\r\n")
    assert [m for m in modules if m == "click" or m.startswith("click.")] == []
    assert _raw(winpy, ["-m", "zluda_runner", word]).stdout == fast.stdout


def test_a_non_ascii_cache_path_piped_prints_as_utf8(winpy: WinPython, tmp_path) -> None:
    cache = tmp_path / "Дмитрий-キャッシュ"
    cache.mkdir()
    out = winpy.zluda_run("cache", "list", env={"ZLUDA_RUNNER_CACHE": winpy.winpath(cache)})
    assert out.returncode == 0, out.stderr
    assert "UnicodeEncodeError" not in out.stderr
    assert winpy.winpath(cache) in out.stdout  # decoded as UTF-8 by the harness: the name intact


# (the comparison of tests/inspection/test_selffacts.py, in the Windows interpreter: both answers)
COMPARE_FACTS = """
import json, os, sys
from zluda_runner.core import startstate
from zluda_runner.inspection import interpreter, selffacts
startstate.remember()
start = startstate.at_start()
child = interpreter._child_facts(sys.executable, sys.executable, None)
print(json.dumps({"here": selffacts.facts(selffacts.child_path(start[0])), "child": child,
                  "started_here": selffacts.started_here(sys.executable, os.environ, start)}))
"""


@pytest.mark.parametrize("layout", ["regular", "portable"])
@pytest.mark.parametrize("form", ["script", "m"])
def test_the_facts_read_in_process_are_the_child_s(layout: str, form: str, request: pytest.FixtureRequest,
                                                   tmp_path) -> None:
    """What the Windows interpreter says of itself, read in the process running zluda-run, is what a
    second python.exe says (issue 28: ``releases`` no longer starts one): in the regular layout and the
    portable one (a ._pth file: no sys.path[0], PYTHONPATH ignored), started with a script or ``-m``."""
    py: WinPython = request.getfixturevalue("winpy" if layout == "regular" else "winpy_portable")
    module = py.home / f"zr_compare_facts_{os.getpid()}.py"  # -m finds it in the working folder / "."
    script = tmp_path / "compare_facts.py"
    for path in (module, script):
        path.write_text(COMPARE_FACTS, encoding="utf-8")
    try:
        out = py.run(["-m", module.stem] if form == "m" else [py.winpath(script)])
    finally:
        module.unlink()
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["started_here"] is True
    assert got["here"] == got["child"]
    assert got["here"]["torch"]["path"] == py.winpath(py.site_packages / "torch")
    assert (got["here"]["startup"]["pth_file"] is not None) == (layout == "portable")
    assert got["here"]["machine"] == "AMD64"  # platform.machine()'s answer, without its cmd /c ver (no _wmi)
