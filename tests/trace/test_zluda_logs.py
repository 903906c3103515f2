"""ZLUDA's own tracer logs, on fixtures written the way the tracers write them.

The fixtures under tests/fixtures/probe/zluda_logs/ were derived from the writers' source code
(vosen/ZLUDA ``zluda_trace`` @ 8a7931be, lshqqytiger/ZLUDA ``zluda_dump`` @ 5e717459); each
folder's README cites the files and says which parts are exact and which illustrative.
"""

from __future__ import annotations

import html
import shutil
from pathlib import Path

from zluda_runner.report.trace_sections import trace_html, trace_sections
from zluda_runner.trace.run import read_trace_dir
from zluda_runner.trace.zluda_log import canonical_guid, parse_log_lines, read_log_dir

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "probe" / "zluda_logs"
CUDART = "{6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9}"


def test_upstream_processes_are_named_after_the_executable() -> None:
    procs = read_log_dir(LOGS / "zluda_trace")
    assert [(p.name, p.executable, p.instance, p.pid) for p in procs] == [
        ("python3.11", "python3.11", 0, None),
        ("python3.11_1", "python3.11", 1, None),
        ("python3.11_2", "python3.11", 2, None),
    ]
    assert {p.log_format for p in procs} == {"zluda-trace"}
    # nothing dropped: every non-empty line is a call or a tracer note
    for proc in procs:
        assert proc.unknown_count == 0 and proc.complete
        assert sum(c.count for c in proc.calls) + proc.message_count == proc.lines
    first = procs[0]
    assert first.messages[0].startswith("Created trace directory /tmp/zluda_log/python3.11")


def test_upstream_dark_api_failures_nesting_and_missing_exports() -> None:
    main, helper, nvidia = read_log_dir(LOGS / "zluda_trace")
    calls = {c.function: c for c in main.calls}
    alloc = calls["cuMemAllocAsync"]
    assert alloc.results == {"CUDA_ERROR_NOT_SUPPORTED": 1}
    assert alloc.first_failure is not None and alloc.first_failure.code == 801
    assert calls["{CUDART_INTERFACE}::get_module_from_cubin_ext2"].results == {"CUDA_SUCCESS": 1}
    tables = {(t.guid, t.found) for t in main.export_tables}
    assert tables == {("{F8CFF951-2146-8B4E-B9E2-FB469E7C0DD9}", False), (CUDART, True)}
    unknown = {(x.symbol, x.found) for x in main.proc_address_lookups if not x.found}
    assert ("cuKernelGetParamCount", False) in unknown and ("", False) in unknown
    assert {c.function: c.results for c in helper.calls}["cuDeviceGetDefaultMemPool"] == {
        "CUDA_ERROR_NOT_SUPPORTED": 1
    }
    nv = {c.function: c for c in nvidia.calls}
    # unknown slots of a known table and of an unknown table; UNKNOWN is not a failure
    assert nv["{CUDART_INTERFACE}::3"].results == {"UNKNOWN": 1} and nv["{CUDART_INTERFACE}::3"].failures == 0
    assert nv["{F8CFF951-2146-8B4E-B9E2-FB469E7C0DD9}::4"].count == 1
    assert nv["cuCtxGetDevice_v2"].missing_in_driver
    assert nv["cublasCreate_v2"].failures == 0 and nv["cudnnCreate"].failures == 0  # their own statuses
    assert nv["cuCtxGetCurrent"].nested == 2 and nv["cublasLtCreate"].nested == 1
    assert nv["cuMemcpyDtoH_v2"].results == {"CUDA_ERROR_ILLEGAL_ADDRESS": 1}
    assert any(m.startswith("Table length mismatch") for m in nvidia.messages)


def test_merged_report_and_views() -> None:
    report = read_trace_dir(LOGS / "zluda_trace")
    assert len(report.processes) == 3 and report.source == "zluda-log"
    init = report.call("cuInit")
    assert init is not None and init.count == 3
    tables = {t.title: t.rows for t in trace_sections(report)[0].tables}
    assert "python3.11_2" in {row["process"] for row in tables["processes"]}
    calls = {row["function"]: row for row in tables["calls"]}
    assert (calls["cuCtxGetDevice_v2"]["count"], calls["cuCtxGetDevice_v2"]["failed"]) == (1, 0)
    assert calls["cuCtxGetDevice_v2"]["status"] == "missing"
    columns = ["process", "kind", "text"]  # the table of the tracer's notes and lines it did not read
    (notes,) = [t for t in trace_sections(report)[0].tables if [c.key for c in t.columns] == columns]
    assert notes.rows and {row["kind"] for row in notes.rows} <= {"unknown", "note"}, notes.rows
    page = trace_html(report)  # the page shows each of the tracer's own lines
    assert all(html.escape(row["text"], quote=False) in page for row in notes.rows), notes.rows


def test_zluda3_dump_format() -> None:
    procs = read_log_dir(LOGS / "zluda_dump")
    assert [(p.name, p.instance, p.log_format) for p in procs] == [
        ("python3.11", 0, "zluda-dump"),
        ("python3.11_1", 1, "zluda-dump"),
        ("python3.11_2", 2, "zluda-dump"),
    ]
    main, helper, failing = procs
    calls = {c.function: c for c in main.calls}
    # ZLUDA 3 prints GUIDs byte-swapped in lower case; both tracers' names agree after reading
    assert canonical_guid("{6cfbd56b-f45b-4ae7-8987-d93912fd9df9}", "zluda-dump") == CUDART
    assert {t.guid for t in main.export_tables} == {CUDART, "{A094798C-2E74-2E74-93F2-0800200C0A66}"}
    assert calls["{CUDART_INTERFACE}::1"].results == {"CUDA_SUCCESS": 1}
    assert calls["{TOOLS_RUNTIME_CALLBACK_HOOKS}::2"].results == {"UNKNOWN": 1}
    assert "Unknown export table function" in main.messages
    assert all(c.nested == 0 for c in main.calls)  # ZLUDA 3 does not nest
    assert {c.function for c in helper.calls if c.missing_in_driver} == {"cuCtxSynchronize"}
    init = {c.function: c for c in failing.calls}["cuInit"]
    assert init.first_failure is not None and init.first_failure.result == "CUDA_ERROR_NO_DEVICE"
    lookups = {(x.symbol, x.version) for x in main.proc_address_lookups}
    assert ("cuGetProcAddress", 11030) in lookups and ("cuInit", 2000) in lookups


def test_nvapi_lines_are_calls() -> None:
    procs = {p.name: p for p in read_log_dir(LOGS / "zluda_trace_windows")}
    game = {c.function: c for c in procs["Game32.exe"].calls}
    assert game["{nvapi:0x33c7358c}"].results == {"-3": 1} and game["{nvapi:0x33c7358c}"].failures == 1
    assert game["NvAPI_Initialize"].failures == 0
    query = {c.function: c for c in procs["python.exe"].calls}["nvapi_QueryInterface"]
    assert query.count == 3 and query.failures == 0  # pointer results, 0x0 = not available
    assert all(p.unknown_count == 0 for p in procs.values())


def test_unknown_lines_are_counted_and_listed(tmp_path: Path) -> None:
    shutil.copytree(LOGS / "zluda_trace" / "python3.11_1", tmp_path / "python3.11")
    log = tmp_path / "python3.11" / "log.txt"
    log.write_text(log.read_text() + "thread 'main' panicked at src/lib.rs:1:1\ncuMemAlloc_v2(dptr: 0x")
    (proc,) = read_log_dir(tmp_path)
    assert proc.unknown_count == 2 and proc.unknown_lines[0].startswith("thread 'main' panicked")
    assert not proc.complete and any("2 line(s)" in w for w in proc.warnings)
    report = read_trace_dir(tmp_path)
    assert any(w.startswith("python3.11: 2 line(s)") for w in report.warnings)


def test_stderr_copy_with_prefixes_reads_the_same() -> None:
    text = (LOGS / "zluda_trace" / "python3.11_2" / "log.txt").read_text()
    prefixed = "".join(f"[ZLUDA_TRACE] {line}\n" for line in text.splitlines())
    a, b = parse_log_lines(text.splitlines()), parse_log_lines(prefixed.splitlines())
    assert [(c.function, c.count, c.nested) for c in a.calls] == [
        (c.function, c.count, c.nested) for c in b.calls
    ]
    assert b.unknown_count == 0


def test_a_table_name_we_do_not_know_is_kept_whole() -> None:
    proc = parse_log_lines(["{SOME_TABLE}::fn(version: 1) -> CUDA_SUCCESS"])
    assert [c.function for c in proc.calls] == ["{SOME_TABLE}::fn"]
    assert [t.guid for t in proc.export_tables] == ["{SOME_TABLE}"]
