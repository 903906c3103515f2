"""Acceptance: `zluda-run poc` through a stand-in ZLUDA release on this CPU machine, with the real
Hugging Face Llama of examples/llama_infer.py (tiny) and a tiny torch-free workload."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.poc.conftest import EXAMPLES, WORKLOAD
from zluda_runner.poc.model import CRITERIA, PocReport
from zluda_runner.report.poc_html import render_poc_html

pytestmark = pytest.mark.slow  # real torch and transformers, through a stand-in release: tens of seconds


def _zluda_run(release: Path, tmp_path: Path, env: dict[str, str],
               *args: str) -> subprocess.CompletedProcess[str]:
    glob = ["--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(release),
            "--results-db", str(tmp_path / "results.db")]
    return subprocess.run([sys.executable, "-m", "zluda_runner", *glob, *args], env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def test_llama_poc_report_is_complete_and_on_the_gpu_fails_honestly(
    standin_release: Path, pywrap: Path, launch_env: dict[str, str], tmp_path: Path
) -> None:
    pytest.importorskip("transformers", reason="the Llama example needs the 'examples' extra (transformers)")
    html = tmp_path / "poc.html"
    llama = [str(pywrap), str(EXAMPLES / "llama_infer.py"), "--tokens", "6", "--layers", "1"]
    proc = _zluda_run(standin_release, tmp_path, launch_env, "--json", "poc", "--runs", "3",
                      "--reference", "cpu", "--html", str(html), "--", *llama)
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)
    criteria = {c["name"]: c for c in report["criteria"]}
    assert list(criteria) == ["ran", "right", "on the GPU", "stable", "speed"]
    assert all(c["status"] in ("pass", "fail") and c["summary"] for c in criteria.values())
    # no GPU here (the fake root is empty): honestly failing, with the reason
    gpu = criteria["on the GPU"]
    assert (gpu["status"], gpu["cause"]) == ("fail", "no-telemetry"), gpu
    # every other criterion evaluated on the real runs
    assert criteria["ran"]["status"] == "pass" and criteria["ran"]["summary"] == "all 3 runs exited 0"
    assert criteria["right"]["status"] == "pass", criteria["right"]
    assert criteria["right"]["summary"] == "logits, tokens match the reference in all 3 runs"
    assert criteria["stable"]["status"] == "pass"
    speed = criteria["speed"]
    assert "tokens/s" in speed["summary"]  # the workload's own unit, against the reference's
    assert any(e.startswith("reference: median") for e in speed["evidence"])
    assert report["verdict"] == "fail" and report["mode"] == "zluda" and report["reference"] == "cpu"
    runs = report["runs"]
    assert [r["index"] for r in runs] == [1, 2, 3] and all(r["exit_code"] == 0 for r in runs)
    assert all(r["tokens"] == 6 for r in runs)
    assert [(o["name"], o["dtype_a"], o["shape_a"]) for o in runs[0]["comparisons"]] == [
        ("logits", "float32", [1, 6, 256]), ("tokens", "int64", [1, 6])]
    # run 1 went through zluda-run's launch (the release is named), the reference did not
    assert report["release"] and Path(report["release"]).name == standin_release.name
    assert report["reference_runs"][0]["argv"] == llama
    # the HTML page: the verdict table and the two plots (inline SVG, well-formed)
    page = html.read_text(encoding="utf-8")
    assert page == render_poc_html(PocReport.from_dict(report))  # the view of the very report --json gave
    for name in ("ran", "right", "on the GPU", "stable", "speed"):
        assert f"<td class=\"\">{name}</td>" in page
    svgs = [page[i: page.index("</svg>", i) + 6] for i in range(len(page)) if page.startswith("<svg", i)]
    assert len(svgs) == 2
    for svg in svgs:
        ET.fromstring(svg)  # noqa: S314 -- our own output, not untrusted data
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched at view time


def test_planted_wrong_output_on_the_zluda_side_fails_right(
    standin_release: Path, pywrap: Path, launch_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**launch_env, "POC_PLANT": "1"}
    proc = _zluda_run(standin_release, tmp_path, env, "--json", "poc", "--runs", "2", "--", str(pywrap),
                      str(WORKLOAD))
    assert proc.returncode == 3, proc.stderr
    report = json.loads(proc.stdout)
    criteria = {c["name"]: c for c in report["criteria"]}
    assert {n: c["status"] for n, c in criteria.items() if n != "speed"} == {
        "ran": "pass", "right": "fail", "on the GPU": "fail", "stable": "pass"}
    assert report["verdict"] == "fail" and "Traceback" not in proc.stderr
    right = [(c["name"], c["max_abs_error"]) for r in report["runs"] for c in r["comparisons"]
             if c["status"] != "agree"]
    assert right == [("values", 0.25)] * 2  # the planted error, in each run
    # the same workload without the planted error: right passes
    clean = _zluda_run(standin_release, tmp_path, launch_env, "poc", "--runs", "1", "--", str(pywrap),
                       str(WORKLOAD))
    passed = "[PASS] right: count, total, values match the reference in the one run"
    assert passed in clean.stdout, clean.stderr


def test_help_and_bad_input_are_answered_without_a_traceback(tmp_path: Path) -> None:
    helped = subprocess.run([sys.executable, "-m", "zluda_runner", "poc", "--help"], capture_output=True,
                            text=True, timeout=120, check=False)
    assert helped.returncode == 0 and "--reference" in helped.stdout
    assert all(name in " ".join(helped.stdout.split()) for name in CRITERIA), helped.stdout  # what it judges
    bad = subprocess.run([sys.executable, "-m", "zluda_runner", "poc", "--runs", "0", "--", "true"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    nowhere = subprocess.run([sys.executable, "-m", "zluda_runner", "poc", "--native", "--html",
                              str(tmp_path / "no" / "such" / "r.html"), "--", "true"],
                             capture_output=True, text=True, timeout=120, check=False)
    assert nowhere.returncode == 1 and "hint:" in nowhere.stderr and "Traceback" not in nowhere.stderr
