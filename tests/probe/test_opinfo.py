"""The OpInfo torch-op probe on the CPU (float32 against float64), with a planted bad op and a
planted crashing op, resumed after the crash; filters, budget and the report view."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import require
from zluda_runner.core.errors import ProbeError
from zluda_runner.probe.opinfo_probe import run_opinfo_probe
from zluda_runner.report.probe_sections import probe_html, probe_sections

# Loaded by the probe's interpreter (PYTHONPATH) before the OpInfo database is built, so the
# database picks up the patched functions: logaddexp answers wrong in float32, hypot kills the
# process with SIGSEGV, and nn.functional.softsign never returns (for the hang test only).
PLANT = """\
import os, signal, time
import torch
_logaddexp = torch.logaddexp
def logaddexp(a, b, *args, **kwargs):
    out = _logaddexp(a, b, *args, **kwargs)
    return out + 0.5 if out.dtype == torch.float32 else out
def hypot(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGSEGV)
torch.logaddexp, torch.hypot = logaddexp, hypot
if os.environ.get("PLANT_HANG"):
    def softsign(*args, **kwargs):
        time.sleep(3600)
    torch.nn.functional.softsign = softsign
"""


def _opinfo_ready() -> None:
    for module in ("torch", "numpy", "expecttest"):
        require(
            importlib.util.find_spec(module) is not None, f"{module} not installed (pip install '.[test]')"
        )


def _planted_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    (tmp_path / "sitecustomize.py").write_text(PLANT)
    old = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{tmp_path}:{old}" if old else str(tmp_path), **extra}


def test_300_ops_on_cpu_with_planted_failure_and_crash(tmp_path: Path) -> None:
    _opinfo_ready()
    report = run_opinfo_probe(sys.executable, _planted_env(tmp_path), device="cpu", dtypes=["float32"])
    assert report.load is not None and report.load.status == "pass", report.load
    cases = {c.id: c for c in report.cases}
    assert len(cases) >= 300 and report.summary.get("pass", 0) >= 300, report.summary
    bad = cases["logaddexp@float32"]
    assert bad.status == "mismatch" and bad.max_abs_err == pytest.approx(0.5, rel=1e-3)
    crashed = cases["hypot@float32"]
    assert crashed.status == "crashed" and crashed.signal == "SIGSEGV" and crashed.area == "binary"
    # the run went on after the crash: ops after hypot in the database were compared too
    ids = list(cases)
    after = ids[ids.index("hypot@float32") + 1 :]
    assert after and any(cases[i].status == "pass" for i in after)
    # torch's own skips are honoured, with torch's reason
    skipped = [c for c in report.cases if c.status == "skipped"]
    assert skipped and all(c.detail.startswith(("torch ", "OpInfo ")) for c in skipped)
    by_family, ops = probe_sections(report)[0].tables  # the counts per op family, then the ops by family
    assert {r["area"]: r for r in by_family.rows}["binary"].get("crashed") == 1 and ops.group_key == "area"
    assert 'data-group="binary"' in probe_html(report)  # the page shows one family at a time
    print(f"\n{len(cases)} op x dtype cases in {report.duration_s:.1f} s: {report.summary}")


def test_filters_dtypes_and_hang(tmp_path: Path) -> None:
    _opinfo_ready()
    env = _planted_env(tmp_path, PLANT_HANG="1")
    report = run_opinfo_probe(
        sys.executable,
        env,
        device="cpu",
        dtypes=["float32", "bfloat16"],
        ops=["nn.functional.softsign", "add", "nn.functional.relu*"],
        op_timeout=5.0,
    )
    got = {c.id: c.status for c in report.cases}
    assert set(got) == {
        f"{op}@{dt}"
        for op in ("add", "nn.functional.softsign", "nn.functional.relu", "nn.functional.relu6")
        for dt in ("float32", "bfloat16")
    }
    assert got["nn.functional.softsign@float32"] == "timeout"
    assert got["add@float32"] == got["add@bfloat16"] == "pass"
    assert got["nn.functional.relu6@bfloat16"] in ("pass", "unsupported")


def test_budget_leaves_the_rest_skipped(tmp_path: Path) -> None:
    _opinfo_ready()
    report = run_opinfo_probe(sys.executable, os.environ, device="cpu", dtypes=["float32"], budget=0.01)
    assert all(c.status == "skipped" for c in report.cases)
    with pytest.raises(ProbeError) as err:
        run_opinfo_probe(sys.executable, os.environ, device="cpu", dtypes=["int8"])
    assert err.value.hint
