"""Trace files: ZLUDA's log format (nested, dark API), our count files, damaged input."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.trace.counts import NO_COUNTS_WARNING, parse_count_text, read_count_dir
from zluda_runner.trace.run import find_zluda_tracer, read_trace_dir
from zluda_runner.trace.zluda_log import parse_log_lines, read_log_dir

CUDART = "{6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9}"
LOG = f"""\
cuInit(flags: 0) -> CUDA_SUCCESS
cuGetProcAddress_v2(symbol: "cuMemAlloc", pfn: 0x7f00, cudaVersion: 3020, flags: 0) -> CUDA_SUCCESS
cuGetProcAddress(symbol: "cuMemAllocManaged", pfn: 0x8, cudaVersion: 6000, flags: 0) -> CUDA_ERROR_NOT_FOUND
cuGetExportTable(ppExportTable: 0x7f10, pExportTableId: {CUDART}) -> CUDA_SUCCESS
{{CUDART_INTERFACE}}::get_module_from_cubin(result: 0x7f18, fatbinc_wrapper: 0x7f20) -> CUDA_SUCCESS
    cuModuleLoadData(module: 0x7f28, image: 0x7f30) -> CUDA_ERROR_NOT_SUPPORTED
        cuCtxGetCurrent(pctx: 0x7f38) -> CUDA_SUCCESS
cuMemAlloc_v2(dptr: 0x7f40, bytesize: 16) -> CUDA_SUCCESS
cuMemAlloc_v2(dptr: 0x7f48, bytesize: 1099511627776) -> CUDA_ERROR_OUT_OF_MEMORY
[ZLUDA_TRACE] cuCtxSynchronize() -> 801
"""


def test_zluda_log_format() -> None:
    proc = parse_log_lines(LOG.splitlines())
    calls = {c.function: c for c in proc.calls}
    assert calls["cuMemAlloc_v2"].count == 2
    assert calls["cuMemAlloc_v2"].results == {"CUDA_SUCCESS": 1, "CUDA_ERROR_OUT_OF_MEMORY": 1}
    ff = calls["cuMemAlloc_v2"].first_failure
    assert ff is not None and (ff.code, ff.call_number) == (2, 2)
    assert calls["cuModuleLoadData"].nested == 1 and calls["cuCtxGetCurrent"].nested == 1
    assert calls["{CUDART_INTERFACE}::get_module_from_cubin"].count == 1
    assert calls["cuCtxSynchronize"].results == {"CUDA_ERROR_NOT_SUPPORTED": 1}
    lookups = {(x.symbol, x.version, x.found) for x in proc.proc_address_lookups}
    assert lookups == {("cuMemAlloc", 3020, True), ("cuMemAllocManaged", 6000, False)}
    assert [(t.guid, t.found) for t in proc.export_tables] == [
        ("{6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9}", True)
    ]
    assert not proc.warnings


def test_log_dir_per_process_and_half_written(tmp_path: Path) -> None:
    (tmp_path / "python_1234").mkdir()
    (tmp_path / "python_1234" / "log.txt").write_text(LOG)
    (tmp_path / "python_1240").mkdir()
    (tmp_path / "python_1240" / "log.txt").write_text(
        "cuInit(flags: 0) -> CUDA_SUCCESS\ncuMemAlloc_v2(dptr: 0x"
    )
    (tmp_path / "python_1250" / "log.txt").mkdir(parents=True)  # unreadable: a folder
    procs = read_log_dir(tmp_path)
    # folder names are the executable's (no plain "python" here: the digits are part of the name)
    assert [(p.name, p.pid, p.instance) for p in procs] == [
        ("python_1234", None, 0),
        ("python_1240", None, 0),
        ("python_1250", None, 0),
    ]
    assert procs[0].complete and not procs[1].complete and not procs[2].complete
    assert any("mid-line" in w for w in procs[1].warnings)
    assert procs[2].calls == [] and procs[2].warnings[0].startswith("cannot read")
    report = read_trace_dir(tmp_path)
    assert report.source == "zluda-log" and report.call("cuInit").count == 2  # type: ignore[union-attr]
    assert len(report.processes) == 3 and any(
        w.startswith("python_1250: cannot read") for w in report.warnings
    )
    assert any(w.startswith("python_1240:") for w in report.warnings)


COUNTS = """\
zluda-runner-trace 1
pid 77
ppid 1
real =/usr/lib/libcuda.so.1
arg =python
arg =my%20script.py
call 3 cuInit 2 2 0 0 0
call 9 cuMemAlloc_v2 3 1 2 2 0
result 9 2 2
lookup =cuInit 2000 0 1 1
lookup = 0 0 1 1
export_table 6bd5fb6c5bf4e74a8987d93912fd9df9 0 1
end
"""


def test_count_file_and_damage(tmp_path: Path) -> None:
    proc = parse_count_text(COUNTS, "zr-trace-77-1.txt")
    assert proc.pid == 77 and proc.argv == ["python", "my script.py"] and proc.complete
    alloc = next(c for c in proc.calls if c.function == "cuMemAlloc_v2")
    assert alloc.results == {"CUDA_SUCCESS": 1, "CUDA_ERROR_OUT_OF_MEMORY": 2}
    assert [x.symbol for x in proc.proc_address_lookups] == ["cuInit", ""]
    assert proc.export_tables[0].guid == "{6bd5fb6c-5bf4-e74a-8987-d93912fd9df9}"
    (tmp_path / "zr-trace-77-1.txt").write_text(COUNTS)
    (tmp_path / "zr-trace-78-1.txt").write_text(
        COUNTS.replace("end\n", "").replace("result 9 2 2", "result x")
    )
    (tmp_path / "zr-trace-79-1.txt.part").write_text(COUNTS[:60])
    (tmp_path / "zr-trace-80-1.txt").write_bytes(b"\x00\xff garbage")
    marker = "zluda-runner-trace 1\npid {pid}\nppid 77\nstarted\n"
    (tmp_path / "zr-trace-77-1.started").write_text(marker.format(pid=77))  # counts written too: ignored
    (tmp_path / "zr-trace-81-5.started").write_text(marker.format(pid=81))  # ended with _exit(): listed
    procs = read_count_dir(tmp_path)
    assert len(procs) == 5
    assert [p.complete for p in procs] == [True, False, False, False, False]
    assert all(p.warnings for p in procs[1:])
    assert (procs[4].pid, procs[4].ppid, procs[4].calls) == (81, 77, [])
    assert procs[4].warnings == [NO_COUNTS_WARNING]
    report = read_trace_dir(tmp_path)
    assert report.call("cuInit").count == 4  # type: ignore[union-attr]  # two files reach the cuInit line


def test_find_zluda_tracer(tmp_path: Path) -> None:
    assert find_zluda_tracer(tmp_path) is None and find_zluda_tracer(None) is None
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "libcuda.so").write_bytes(b"")
    assert find_zluda_tracer(tmp_path) == tmp_path / "trace" / "libcuda.so"


def test_a_recorded_call_fails_as_the_view_says() -> None:
    """A library's own success status, a pointer result or no status is no failure in the record
    either (it counted every result but CUDA_SUCCESS as one)."""
    from zluda_runner.trace.model import TraceCall, TraceReport

    calls = (TraceCall("cublasCreate_v2", 2, {"CUBLAS_STATUS_SUCCESS": 2}),
             TraceCall("cuGetProcAddress", 2, {"0x7f00": 1, "UNKNOWN": 1}),
             TraceCall("cuInit", 2, {"CUDA_SUCCESS": 1, "CUDA_ERROR_NO_DEVICE": 1}))
    rows = {r.item: (r.ok, r.numbers["failures"]) for r in TraceReport(calls=calls).result_rows().rows}
    assert rows == {"cublasCreate_v2": (True, 0.0), "cuGetProcAddress": (True, 0.0), "cuInit": (False, 1.0)}
