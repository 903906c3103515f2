"""`zluda-run --trace` with a release that ships its own tracer (vosen/ZLUDA rewrite, ``trace/libcuda.so.1``).

The tracer is a C stand-in (tests/fixtures/plan/zluda_trace_standin.c): it forwards to ``ZLUDA_CUDA_LIB`` and
logs ZLUDA-style lines under ``ZLUDA_LOG_DIR``; the client is NVIDIA's real libcudart.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from zluda_runner.trace.run import NO_PROCESS_WARNING, read_trace_dir

CUDART_TABLE_GUID = "{6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9}"  # ZLUDA calls it CUDART_INTERFACE


@pytest.fixture(scope="module")
def zluda_tracer(cc_build) -> Path:
    return cc_build(["plan/zluda_trace_standin.c"], "libcuda.so.1",
                    args=["-Wl,-soname,libcuda.so.1", "-ldl", "-pthread"])


@pytest.fixture(params=["libcuda.so.1", "libcuda.so"])
def release_with_tracer(request, standin_releases, zluda_tracer: Path, tmp_path: Path) -> Path:
    """The good stand-in release plus the stand-in tracer as ``trace/libcuda.so.1``, or as
    ``trace/libcuda.so`` alone (then it must still answer to the name cudart dlopens)."""
    release = tmp_path / "release"
    shutil.copytree(standin_releases["good"], release, symlinks=True)
    (release / "trace").mkdir()
    shutil.copy2(zluda_tracer, release / "trace" / request.param)
    return release


def test_release_tracer_logs_are_the_report(cudart_client: Path, release_with_tracer: Path, zluda_run,
                                            tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    cache = tmp_path / "cache"
    proc = zluda_run(["--cache-dir", str(cache), "--zluda-dir", str(release_with_tracer), "--trace",
                      "--trace-out", str(out), "--", str(cudart_client)])
    assert proc.returncode == 0, proc.stderr
    # the tracer forwarded to the release's driver: the client got the stand-in's answers
    assert "cudaDriverGetVersion=0 version=13000" in proc.stdout, proc.stdout + proc.stderr
    assert str(out) in proc.stderr and out.is_file()  # says where the report went

    report = json.loads(out.read_text())
    assert report["source"] == "zluda-log" and report["exit_code"] == 0
    # one process, known by its log folder (upstream names it after the executable, never a pid;
    # this stand-in tracer names it after its pid, which is then just a name)
    assert len(report["processes"]) == 1 and report["processes"][0]["name"].isdigit()
    assert report["warnings"] == []
    calls = {c["function"]: c for c in report["calls"]}

    # cuInit (through the wrapper cudart got from cuGetProcAddress) made one nested cuDriverGetVersion
    assert calls["cuInit"]["count"] == 1 and calls["cuInit"]["results"] == {"CUDA_SUCCESS": 1}
    assert calls["cuInit"]["nested"] == 0
    version = calls["cuDriverGetVersion"]
    assert version["nested"] == 1 and version["count"] >= 2  # cudart's own call(s) + the nested one
    assert version["results"] == {"CUDA_SUCCESS": version["count"]}

    # every entry point cudart looked up went through the tracer's cuGetProcAddress(_v2)
    lookups = report["proc_address_lookups"]
    lookup_calls = sum(calls[n]["count"] for n in ("cuGetProcAddress", "cuGetProcAddress_v2") if n in calls)
    assert lookup_calls > 400 and sum(x["count"] for x in lookups) == lookup_calls
    found = {x["symbol"] for x in lookups if x["found"] and x["version"]}
    assert {"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuGetExportTable"} <= found

    # the dark-API line names its table; cudart's export-table requests are logged with their GUIDs
    dark = calls["{ZLUDA_STANDIN_TABLE}::check_context"]
    assert dark["count"] == 1 and dark["results"] == {"CUDA_SUCCESS": 1}
    tables = {t["guid"]: t for t in report["export_tables"]}
    assert tables["{ZLUDA_STANDIN_TABLE}"]["found"] is True
    export = calls["cuGetExportTable"]  # the stand-in driver has no tables: every request fails
    assert export["results"] == {"CUDA_ERROR_NOT_FOUND": export["count"]}
    assert export["first_failure"]["code"] == 500
    assert tables[CUDART_TABLE_GUID]["found"] is False  # cudart asks for its table

    # the raw logs stay in the cache and read back to the same calls
    raw = [p for p in (cache / "traces").glob("trace-*") if (p / "zluda-log").is_dir()]
    assert len(raw) == 1
    again = read_trace_dir(raw[0])
    assert again.source == "zluda-log" and {c.function: c.count for c in again.calls} == {
        name: c["count"] for name, c in calls.items()
    }


def test_release_tracer_passes_the_exit_code_through(release_with_tracer: Path, zluda_run,
                                                     tmp_path: Path) -> None:
    """A workload that fails keeps its exit code; one that never loads libcuda is reported as such."""
    out = tmp_path / "trace.json"
    proc = zluda_run(["--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(release_with_tracer),
                      "--trace", "--trace-out", str(out), "--", "sh", "-c", "exit 7"])
    assert proc.returncode == 7, proc.stderr
    report = json.loads(out.read_text())
    assert report["source"] == "zluda-log" and report["exit_code"] == 7 and report["processes"] == []
    assert report["warnings"] == [NO_PROCESS_WARNING]
