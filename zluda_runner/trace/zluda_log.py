"""Parse the logs of ZLUDA's own tracer (vosen/ZLUDA rewrite, ``trace/`` folder).

The tracer writes, under ``ZLUDA_LOG_DIR``, one folder per process with a ``log.txt``:
one line per call, ``name(arg: value, ...) -> RESULT``; a call made while another is running
is indented 4 spaces per level; dark-API calls read ``{GUID_NAME}::fn(...)``. Older builds
prefix lines with ``[ZLUDA_DUMP]``. Lines of any other shape (messages, a half-written last
line) are counted and reported as a warning, never fatal.
"""

from __future__ import annotations

import re
from pathlib import Path

from zluda_runner.data.driver_api import driver_api
from zluda_runner.trace.model import (
    SOURCE_ZLUDA_LOG,
    ExportTableRequest,
    FirstFailure,
    ProcAddressLookup,
    TraceCall,
    TraceProcess,
)

LOG_NAME = "log.txt"
INDENT = 4
_PREFIX = re.compile(r"^\[ZLUDA_DUMP\]\s?")
_CALL = re.compile(
    r"^(?P<indent> *)(?P<name>(?:\{[^}]*\}::)?[A-Za-z_][A-Za-z0-9_]*)"
    r"\((?P<args>.*)\)\s*->\s*(?P<result>\S+)\s*$"
)
_ARG = re.compile(r"(\w+):\s*(\"(?:[^\"\\]|\\.)*\"|\{[^}]*\}|[^,]+)")
_DIGITS = re.compile(r"(\d+)")


def _args(text: str) -> dict[str, str]:
    return {k: v.strip() for k, v in _ARG.findall(text)}


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value, 0)
    except ValueError:
        return None


def _result(token: str) -> tuple[str, int | None]:
    """``CUDA_SUCCESS`` -> (name, 0); ``801`` -> (CUDA_ERROR_NOT_SUPPORTED, 801)."""
    api = driver_api()
    code = _int(token)
    if code is not None:
        return api.result_name(code), code
    name = token.rstrip(",;")
    return name, api.result_code(name)


def parse_log_text(text: str, *, file: str = "", pid: int | None = None) -> TraceProcess:
    proc = TraceProcess(pid=pid, source=SOURCE_ZLUDA_LOG, file=file)
    calls: dict[str, TraceCall] = {}
    lookups: dict[tuple[str, int | None, int | None, bool], ProcAddressLookup] = {}
    tables: dict[tuple[str, bool], ExportTableRequest] = {}
    odd = 0
    for raw in text.splitlines():
        line = _PREFIX.sub("", raw.rstrip("\r"))
        if not line.strip():
            continue
        match = _CALL.match(line)
        if match is None:
            odd += 1
            continue
        name = match["name"]
        result, code = _result(match["result"])
        depth = len(match["indent"]) // INDENT
        call = calls.setdefault(name, TraceCall(name))
        call.count += 1
        call.results[result] = call.results.get(result, 0) + 1
        if depth:
            call.nested += 1
        if result != "CUDA_SUCCESS" and call.first_failure is None:
            call.first_failure = FirstFailure(result, code, call.count)
        args = _args(match["args"])
        if name in ("cuGetProcAddress", "cuGetProcAddress_v2"):
            symbol = args.get("symbol", "").strip('"')
            key = (symbol, _int(args.get("cudaVersion")), _int(args.get("flags")), result == "CUDA_SUCCESS")
            if key in lookups:
                lookups[key].count += 1
            else:
                lookups[key] = ProcAddressLookup(*key)
        elif name == "cuGetExportTable":
            guid = args.get("pExportTableId", "?")
            tkey = (guid, result == "CUDA_SUCCESS")
            if tkey in tables:
                tables[tkey].count += 1
            else:
                tables[tkey] = ExportTableRequest(*tkey)
        if name.startswith("{"):
            guid = name.split("::", 1)[0]
            if not any(t.guid == guid for t in tables.values()):
                tables[(guid, True)] = ExportTableRequest(guid, True, 0)
    proc.calls = sorted(calls.values(), key=lambda c: (-c.count, c.function))
    proc.proc_address_lookups = list(lookups.values())
    proc.export_tables = list(tables.values())
    if odd:
        proc.warnings.append(f"{odd} line(s) not in the 'name(args) -> RESULT' form were skipped")
    return proc


def read_log_dir(log_dir: Path) -> list[TraceProcess]:
    """One :class:`TraceProcess` per ``<process folder>/log.txt`` under ``log_dir``."""
    log_dir = Path(log_dir)
    processes = []
    logs = sorted(log_dir.glob(f"*/{LOG_NAME}"))
    if (log_dir / LOG_NAME).is_file():
        logs.insert(0, log_dir / LOG_NAME)
    for log in logs:
        digits = _DIGITS.findall(log.parent.name) if log.parent != log_dir else []
        pid = int(digits[-1]) if digits else None
        try:
            text = log.read_text(errors="replace")
        except OSError as exc:
            proc = TraceProcess(pid=pid, source=SOURCE_ZLUDA_LOG, file=str(log), complete=False)
            proc.warnings.append(f"cannot read {log}: {exc}")
            processes.append(proc)
            continue
        proc = parse_log_text(text, file=str(log), pid=pid)
        if text and not text.endswith("\n"):
            proc.complete = False
            proc.warnings.append("log ends mid-line (process killed while writing?)")
        processes.append(proc)
    return processes
