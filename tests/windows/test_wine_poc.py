"""``zluda-run poc`` on the official Windows CPython under Wine: the command answers --help, and a
native verdict over a tiny workload (tests/poc/workload.py) runs to a complete report -- "on the GPU"
failing with the reason Windows' GPU counters give under Wine, the other criteria judged, a planted
wrong output failing "right" -- without a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.windows.winpy import WinPython

WORKLOAD = Path(__file__).resolve().parents[1] / "poc" / "workload.py"


def test_poc_answers_help(winpy: WinPython) -> None:
    helped = winpy.zluda_run("poc", "--help")
    assert helped.returncode == 0, helped.stdout + helped.stderr
    assert "on the GPU" in helped.stdout and "--reference" in helped.stdout


@pytest.mark.parametrize("layout", ["regular", "portable"])
def test_poc_native_run_reports_every_criterion(layout: str, winpy: WinPython, winpy_portable: WinPython,
                                                tmp_path: Path) -> None:
    py = winpy if layout == "regular" else winpy_portable
    env = {"ZLUDA_RUNNER_CACHE": py.winpath(tmp_path / "cache")}
    html = tmp_path / "poc.html"
    argv = ["--no-record", "--json", "poc", "--native", "--runs", "2", "--min-speedup", "0",
            "--html", py.winpath(html), "--", py.winpath(py.exe), py.winpath(WORKLOAD)]
    proc = py.zluda_run(*argv, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    status = {c["name"]: c["status"] for c in report["criteria"]}
    assert status == {"ran": "pass", "right": "pass", "on the GPU": "fail", "stable": "pass", "speed": "pass"}
    gpu = next(c for c in report["criteria"] if c["name"] == "on the GPU")
    assert gpu["summary"].startswith("not shown: no GPU telemetry") and report["telemetry"]
    assert report["mode"] == "native" and [r["exit_code"] for r in report["runs"]] == [0, 0]
    assert "<svg" in html.read_text(encoding="utf-8")
    planted = py.zluda_run(*argv[:-3], "--", py.winpath(py.exe), py.winpath(WORKLOAD),
                           env={**env, "POC_PLANT": "1"})
    assert planted.returncode == 3 and "Traceback" not in planted.stderr, planted.stderr
    right = next(c for c in json.loads(planted.stdout)["criteria"] if c["name"] == "right")
    assert right["status"] == "fail" and "values differ" in " ".join(right["evidence"])
