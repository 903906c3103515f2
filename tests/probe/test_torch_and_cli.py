"""Torch-level probe (CPU mode here) and the probe / trace-report commands."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from click.testing import CliRunner

from tests.conftest import require
from zluda_runner.cli import main_group
from zluda_runner.probe import run_torch_probe


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def test_torch_ops_on_cpu_match_float64() -> None:
    require(_has_torch(), "torch not installed (pip install torch==2.13.0)")
    report = run_torch_probe(sys.executable, os.environ, device="cpu", timeout=300)
    assert report.load is not None and report.load.status == "pass"
    ids = {c.id for c in report.cases}
    assert {"matmul.fp16", "matmul.bf16", "sdpa", "fft", "random.seeded"} <= ids
    assert report.summary == {"pass": len(report.cases)}
    assert all(c.max_abs_err is not None for c in report.cases if c.id != "random.seeded")


def test_torch_without_cuda_says_unavailable() -> None:
    require(_has_torch(), "torch not installed (pip install torch==2.13.0)")
    import torch

    if torch.cuda.is_available():
        return
    report = run_torch_probe(sys.executable, os.environ, device="cuda", timeout=300)
    assert report.load is not None and report.load.status == "unavailable"
    assert "CUDA is not available" in report.load.detail and report.cases == []


def test_probe_command_json_and_html(standin: Path, tmp_path: Path) -> None:
    page = tmp_path / "probe.html"
    result = CliRunner().invoke(
        main_group,
        [
            "probe",
            "--libcuda",
            str(standin),
            "--case",
            "init.cuInit",
            "--case",
            "device.uuid",
            "--json",
            "--html",
            str(page),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["schema"] == 1 and [c["status"] for c in data["cases"]] == ["pass", "fail"]
    assert "<table" in page.read_text()


def test_probe_command_without_libcuda(tmp_path: Path, monkeypatch) -> None:
    # No --libcuda: the driver comes from --zluda-dir, which here holds no ZLUDA at all.
    result = CliRunner().invoke(main_group, ["--zluda-dir", str(tmp_path), "probe"])
    assert result.exit_code == 1 and "does not look like a ZLUDA release" in result.output
    assert "hint:" in result.output
    # Nor --zluda-dir: the manifest's release for this host is fetched; a mirror without it fails
    # with the URL named, and nothing is left in the cache.
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    cache = tmp_path / "cache"
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", mirror.as_uri())
    result = CliRunner().invoke(main_group, ["--cache-dir", str(cache), "probe", "--trust-on-first-use"])
    assert result.exit_code == 1, result.output
    assert "zluda-linux-" in result.output and "hint:" in result.output
    leftovers = [p for p in cache.rglob("*") if p.is_file() and p.suffix not in (".lock", ".json")]
    assert leftovers == [] and not any(cache.rglob("*.complete.json"))


def test_trace_report_command(tmp_path: Path) -> None:
    (tmp_path / "p_1").mkdir()
    (tmp_path / "p_1" / "log.txt").write_text("cuInit(flags: 0) -> CUDA_SUCCESS\ncuCtxSynchronize() -> 801\n")
    result = CliRunner().invoke(main_group, ["trace-report", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {c["function"] for c in data["calls"]} == {"cuInit", "cuCtxSynchronize"}
    saved = tmp_path / "trace.json"
    saved.write_text(result.stdout)
    md = CliRunner().invoke(main_group, ["trace-report", str(saved), "--html", str(tmp_path / "t.html")])
    assert md.exit_code == 0 and "cuCtxSynchronize" in md.stdout
    bad = CliRunner().invoke(main_group, ["trace-report", str(tmp_path / "p_1" / "log.txt")])
    assert bad.exit_code == 1 and "not a trace report" in bad.output
