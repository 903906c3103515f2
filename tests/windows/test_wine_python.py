"""The test platform itself: the official Windows CPython under Wine runs zluda-runner as installed."""

from __future__ import annotations

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


def test_help_runs_on_windows(winpy: WinPython) -> None:
    out = winpy.zluda_run("--help")
    assert out.returncode == 0, out.stderr
    assert "Usage:" in out.stdout


def test_a_non_ascii_cache_path_piped_prints_as_utf8(winpy: WinPython, tmp_path) -> None:
    cache = tmp_path / "Дмитрий-キャッシュ"
    cache.mkdir()
    out = winpy.zluda_run("cache", "list", env={"ZLUDA_RUNNER_CACHE": winpy.winpath(cache)})
    assert out.returncode == 0, out.stderr
    assert "UnicodeEncodeError" not in out.stderr
    assert winpy.winpath(cache) in out.stdout  # decoded as UTF-8 by the harness: the name intact
