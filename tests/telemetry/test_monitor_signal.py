"""`zluda-run --monitor -- CMD` and `zluda-run --trace -- CMD` run the workload as a child, so the shell
sees zluda-run exit with 128+N, not the workload die: both say which signal killed it ("killed by
SIGSEGV"), by core.proctree.ended_by, as a shell says it of a job it ran itself; the exit code stays
128+N, a plain exit with that number says nothing, and the trace report records the name (``ended_by``).
Through the real console entry, against a stand-in release and a fake amdgpu sysfs tree."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.telemetry.fake_sysfs import GIB, one_gpu_host
from tests.telemetry.test_monitor_paths import _zluda_run
from zluda_runner.trace.model import TraceReport

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals, amdgpu sysfs")

SEGV = ["sh", "-c", "kill -SEGV $$"]


def test_monitor_names_the_signal_that_killed_the_workload(tmp_path: Path, standin_release: Path) -> None:
    root = tmp_path / "root"
    one_gpu_host(root, busy=1, vram_used=GIB)
    proc = _zluda_run(root, tmp_path, "--zluda-dir", str(standin_release), "--monitor", "--", *SEGV)
    assert proc.returncode == 139, proc.stderr
    assert "SIGSEGV (exit 139)" in proc.stderr  # the signal by name, and the exit code
    plain = _zluda_run(root, tmp_path, "--zluda-dir", str(standin_release), "--monitor", "--", "sh", "-c",
                       "exit 139")
    assert plain.returncode == 139 and "SIG" not in plain.stderr  # an exit, whatever its number


def test_trace_names_the_signal_and_records_it(tmp_path: Path, standin_release: Path) -> None:
    root = tmp_path / "root"
    one_gpu_host(root, busy=1, vram_used=GIB)
    out = tmp_path / "trace.json"
    proc = _zluda_run(root, tmp_path, "--zluda-dir", str(standin_release), "--trace", "--trace-out", str(out),
                      "--", *SEGV)
    assert proc.returncode == 139, proc.stderr
    assert "SIGSEGV, exit 139" in proc.stderr
    saved = json.loads(out.read_text())
    assert saved["exit_code"] == 139 and saved["ended_by"] == "SIGSEGV"
    del saved["ended_by"]  # a report written before the field: read as not known
    assert TraceReport.from_json(json.dumps(saved)).ended_by is None
    from zluda_runner.report.trace_sections import trace_sections

    (section,) = trace_sections(TraceReport.from_json(out.read_text()))
    assert [line for line in section.lines if "139" in line and "SIGSEGV" in line]  # the trace report too
