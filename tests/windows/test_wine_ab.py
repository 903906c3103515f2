"""``zluda-run ab`` on the official Windows CPython under Wine: both sides run, outputs compared,
exit 0 when they agree and 3 when they do not (the README's exit codes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.windows.winpy import WinPython

RECORDER = """\
import sys
from zluda_runner import ab

offset = float(sys.argv[1])
with ab.timer("work"):
    values = [i * 0.5 + offset for i in range(8)]
ab.record("values", values)
print("recorded", len(values))
"""


@pytest.mark.parametrize("layout", ["regular", "portable"])
def test_ab_agrees_and_disagrees_with_the_documented_exit_codes(
    layout: str, winpy: WinPython, winpy_portable: WinPython, tmp_path: Path
) -> None:
    py = winpy if layout == "regular" else winpy_portable
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER, encoding="utf-8")
    side = f"{py.winpath(py.exe)} {py.winpath(script)}"
    env = {"ZLUDA_RUNNER_CACHE": py.winpath(tmp_path / "cache")}
    same = py.zluda_run("--no-record", "ab", "--runs", "1", "--json", "--a-cmd", f"{side} 0",
                        "--b-cmd", f"{side} 0", env=env)
    assert same.returncode == 0, same.stdout + same.stderr
    report = json.loads(same.stdout)
    assert report["agree"] is True and not report["problems"]
    differ = py.zluda_run("--no-record", "ab", "--runs", "1", "--json", "--a-cmd", f"{side} 0.25",
                          "--b-cmd", f"{side} 0", env=env)
    assert differ.returncode == 3, differ.stdout + differ.stderr
    assert json.loads(differ.stdout)["agree"] is False
