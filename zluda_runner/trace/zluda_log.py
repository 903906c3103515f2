"""Parse the logs of ZLUDA's own tracers: upstream's ``zluda_trace`` and ZLUDA 3's ``zluda_dump``.

Both write, under ``ZLUDA_LOG_DIR`` (upstream) or ``ZLUDA_DUMP_DIR`` (ZLUDA 3 / the lshqqytiger
fork), one folder per process named after the executable: ``<exe>``, then ``<exe>_1``,
``<exe>_2`` ... (an ordinal of creation in that folder, never a pid), each with a ``log.txt``
(vosen/ZLUDA ``zluda_trace/src/lib.rs`` ``create_trace_directory``; lshqqytiger/ZLUDA
``zluda_dump/src/lib.rs`` ``create_dump_directory``). One line per call,
``name(arg: value, ...) -> RESULT``; ``(...)`` when the arguments were never formatted and
``UNKNOWN`` when no result was seen. Upstream nests a call made during another by 4 spaces per
level; ZLUDA 3 does not nest. Lines indented under a call that are not calls are the tracer's
notes (``Created trace directory ...``, ``No function X in the underlying library`` ...).
Dark-API calls read ``{CUDART_INTERFACE}::fn``, ``{CUDART_INTERFACE}::3`` or ``{GUID}::3``
(upstream, GUID in memory order, upper case) or ``{guid}::3`` (ZLUDA 3: lower case, the first
three fields byte-swapped); nvapi calls read ``{nvapi:0x33c7358c}`` or ``NvAPI_*``. Copies on
stderr carry ``[ZLUDA_TRACE] `` / ``[ZLUDA_DUMP] `` before each line. Every line is accounted
for: calls, notes, and lines of no known shape (counted and listed, never silently dropped).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from zluda_runner.data.driver_api import driver_api
from zluda_runner.trace.model import (
    SOURCE_ZLUDA_LOG,
    ExportTableRequest,
    FirstFailure,
    ProcAddressLookup,
    TraceCall,
    TraceProcess,
    is_failure,
)

LOG_NAME = "log.txt"
INDENT = 4
FORMAT_TRACE, FORMAT_DUMP = "zluda-trace", "zluda-dump"
MAX_LINE = 1 << 16  # a longer line is read in pieces; the tail pieces count as unknown lines
MAX_KEPT = 50  # notes and unknown lines kept verbatim per process (all are counted)
# dark-API tables by GUID in memory order (vosen/ZLUDA dark_api/src/lib.rs @ 8a7931be)
DARK_TABLES = {
    "6BD5FB6C-5BF4-E74A-8987-D93912FD9DF9": "CUDART_INTERFACE",
    "42D85A81-23F6-CB47-8298-F6E78A3AECDC": "TOOLS_TLS",
    "A094798C-2E74-2E74-93F2-0800200C0A66": "TOOLS_RUNTIME_CALLBACK_HOOKS",
    "C693336E-1121-DF11-A8C3-68F355D89593": "CONTEXT_LOCAL_STORAGE_INTERFACE_V0301",
    "0CA50B8C-1004-929A-89A7-D0DF10E77286": "CTX_CREATE_BYPASS",
    "195BCBF4-D67D-024A-ACC5-1D29CEA631AE": "HEAP_ACCESS",
    "B10541E1-F7C7-C74A-9F64-F223BE99F1E2": "DEVICE_EXTENDED_RT",
    "D4082055-BDE6-704B-8D34-BA123C66E1F2": "INTEGRITY_CHECK",
    "263E8860-7CD2-6143-92F6-BBD5006DFA7E": "CONTEXT_CHECKS",
    "DD9E98A4-F410-4844-99B0-E2AEB7B432B5": "HYBRID_CUDART",
}
_TABLE_GUIDS = {name: guid for guid, name in DARK_TABLES.items()}
_PREFIX = re.compile(r"^\[ZLUDA_(?:TRACE|DUMP)\] ")
_NAME = r"(?:\{nvapi:0x[0-9A-Fa-f]+\}|\{[0-9A-Za-z_-]+\}::\w+|[A-Za-z_]\w*)"
_CALL = re.compile(rf"^(?P<indent> *)(?P<name>{_NAME})\((?P<args>.*)\) -> (?P<result>\S+)$")
_ARG = re.compile(r"(\w+):\s*(\"(?:[^\"\\]|\\.)*\"|\{[^}]*\}|[^,]+)")
_GUID = re.compile(
    r"^\{?([0-9A-Fa-f]{8})-([0-9A-Fa-f]{4})-([0-9A-Fa-f]{4})-([0-9A-Fa-f]{4})-([0-9A-Fa-f]{12})\}?$"
)
_MISSING = re.compile(r"^No function (\w+) in the underlying (?:CUDA )?library$")
_LOWER_DARK = re.compile(r"^\{[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\}::")
_ORDINAL = re.compile(r"^(?P<exe>.+)_(?P<n>[1-9]\d*)$")


def _args(text: str) -> dict[str, str]:
    return {k: v.strip() for k, v in _ARG.findall(text)}


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value, 0)
    except ValueError:
        return None


def _swap(hex_text: str) -> str:
    return "".join(reversed([hex_text[i : i + 2] for i in range(0, len(hex_text), 2)]))


def canonical_guid(text: str, log_format: str = FORMAT_TRACE) -> str:
    """``{6BD5FB6C-5BF4-E74A-...}``: memory byte order, upper case, braced.

    ZLUDA 3 prints the first three fields as little-endian numbers (``{6cfbd56b-f45b-4ae7-...}``);
    they are swapped back, so both tracers name a table the same way."""
    m = _GUID.match(text.strip())
    if m is None:
        return text
    parts = list(m.groups())
    if log_format == FORMAT_DUMP:
        parts[:3] = [_swap(p) for p in parts[:3]]
    return "{" + "-".join(parts).upper() + "}"


def _dark_parts(name: str, log_format: str) -> tuple[str, str] | None:
    """``(GUID, function or index)`` of a dark-API call name, else None."""
    if not name.startswith("{") or "::" not in name:
        return None
    table, fn = name[1:].split("}::", 1)
    guid = _TABLE_GUIDS.get(table)
    if guid is None:
        guid = canonical_guid(table, log_format).strip("{}")  # a GUID, or a table name we do not know
    return "{" + guid + "}", fn


def _display_name(name: str, log_format: str) -> str:
    """The call's name, dark-API tables named where known: ``{CUDART_INTERFACE}::3``."""
    parts = _dark_parts(name, log_format)
    if parts is None:
        return name
    guid, fn = parts
    table = DARK_TABLES.get(guid[1:-1])
    return f"{{{table}}}::{fn}" if table else f"{guid}::{fn}"


def _result(token: str, name: str) -> tuple[str, int | None]:
    """``CUDA_SUCCESS`` -> (name, 0); ``801`` from a driver call -> (CUDA_ERROR_NOT_SUPPORTED, 801).

    Other libraries' statuses, ``()``, pointers, ``UNKNOWN`` and nvapi's numbers stay as written."""
    api = driver_api()
    number = _int(token)
    if token.startswith("CUDA_"):
        return token, api.result_code(token)
    if number is not None and name.startswith("cu") and not token.startswith("0x"):
        return api.result_name(number), number
    return token, None


def detect_format(lines: Iterable[str]) -> str:
    """ZLUDA 3's dumper is told apart by its own notes and its lower-case dark-API GUIDs."""
    for line in lines:
        text = _PREFIX.sub("", line).strip()
        if text.startswith("Created trace directory"):
            return FORMAT_TRACE
        if (
            text.startswith("Created dump directory")
            or text.endswith("in the underlying CUDA library")
            or text == "Unknown export table function"
            or _LOWER_DARK.match(text)
        ):
            return FORMAT_DUMP
    return FORMAT_TRACE


class _Parser:
    def __init__(self, proc: TraceProcess) -> None:
        self.proc = proc
        self.calls: dict[str, TraceCall] = {}
        self.lookups: dict[tuple[str, int | None, int | None, bool], ProcAddressLookup] = {}
        self.tables: dict[tuple[str, bool], ExportTableRequest] = {}

    def note(self, text: str) -> None:
        self.proc.message_count += 1
        if len(self.proc.messages) < MAX_KEPT:
            self.proc.messages.append(text)
        missing = _MISSING.match(text)
        if missing and missing.group(1) in self.calls:
            self.calls[missing.group(1)].missing_in_driver = True

    def unknown(self, text: str) -> None:
        self.proc.unknown_count += 1
        if len(self.proc.unknown_lines) < MAX_KEPT:
            self.proc.unknown_lines.append(text[:300])

    def line(self, raw: str) -> None:
        line = _PREFIX.sub("", raw.rstrip("\r\n"))
        if not line.strip():
            return
        self.proc.lines += 1
        match = _CALL.match(line)
        if match is None:
            if line.startswith(" " * INDENT):
                self.note(line.strip())
            else:
                self.unknown(line)
            return
        fmt = self.proc.log_format
        raw_name = match["name"]
        name = _display_name(raw_name, fmt)
        result, code = _result(match["result"], name)
        depth = len(match["indent"]) // INDENT
        call = self.calls.setdefault(name, TraceCall(name))
        call.count += 1
        call.results[result] = call.results.get(result, 0) + 1
        if depth:
            call.nested += 1
        if is_failure(result) and call.first_failure is None:
            call.first_failure = FirstFailure(result, code, call.count)
        if name in ("cuGetProcAddress", "cuGetProcAddress_v2"):
            args = _args(match["args"])
            symbol = args.get("symbol", "").strip('"')
            found = result == "CUDA_SUCCESS"
            key = (symbol, _int(args.get("cudaVersion")), _int(args.get("flags")), found)
            if key in self.lookups:
                self.lookups[key] = replace(self.lookups[key], count=self.lookups[key].count + 1)
            else:
                self.lookups[key] = ProcAddressLookup(*key)
        elif name == "cuGetExportTable":
            guid = canonical_guid(_args(match["args"]).get("pExportTableId", "?"), fmt)
            tkey = (guid, result == "CUDA_SUCCESS")
            if tkey in self.tables:
                self.tables[tkey] = replace(self.tables[tkey], count=self.tables[tkey].count + 1)
            else:
                self.tables[tkey] = ExportTableRequest(*tkey)
        dark = _dark_parts(raw_name, fmt)
        if dark is not None and not any(t.guid == dark[0] for t in self.tables.values()):
            self.tables[(dark[0], True)] = ExportTableRequest(dark[0], True, 0)

    def finish(self) -> TraceProcess:
        proc = self.proc
        proc.calls = sorted(self.calls.values(), key=lambda c: (-c.count, c.function))
        proc.proc_address_lookups = list(self.lookups.values())
        proc.export_tables = list(self.tables.values())
        if proc.unknown_count:
            first = proc.unknown_lines[0] if proc.unknown_lines else ""
            proc.warnings.append(
                f"{proc.unknown_count} line(s) neither a call nor a tracer note (first: {first[:120]!r})"
            )
        return proc


def parse_log_lines(
    lines: Iterable[str], *, file: str = "", name: str = "", log_format: str | None = None
) -> TraceProcess:
    lines = list(lines) if log_format is None else lines
    fmt = log_format or detect_format(lines)
    parser = _Parser(TraceProcess(pid=None, source=SOURCE_ZLUDA_LOG, file=file, name=name, log_format=fmt))
    for raw in lines:
        parser.line(raw)
    return parser.finish()


def process_identity(folder: str, siblings: set[str]) -> tuple[str, int]:
    """``python3.11_2`` beside ``python3.11`` -> (``python3.11``, 2); ``python3.11`` -> (..., 0).

    A trailing ``_N`` is the tracer's counter only when the plain name is there too; otherwise it
    is part of the executable's own name (``my_tool_2``), whose first folder this is."""
    m = _ORDINAL.match(folder)
    if m and m["exe"] in siblings:
        return m["exe"], int(m["n"])
    return folder, 0


def _read_lines(log: Path, proc_warnings: list[str]) -> tuple[list[str], bool]:
    """The log's lines (read in bounded pieces) and whether it ended with a newline."""
    lines: list[str] = []
    ended = True
    with open(log, encoding="utf-8", errors="replace", newline="") as fh:
        while True:
            piece = fh.readline(MAX_LINE)
            if not piece:
                break
            ended = piece.endswith("\n")
            lines.append(piece)
    if not ended and lines:
        proc_warnings.append("log ends mid-line (process killed while writing?)")
    return lines, ended


def read_log_dir(log_dir: Path) -> list[TraceProcess]:
    """One :class:`TraceProcess` per ``<process folder>/log.txt`` under ``log_dir``."""
    log_dir = Path(log_dir)
    logs = sorted(log_dir.glob(f"*/{LOG_NAME}"))
    if (log_dir / LOG_NAME).is_file():
        logs.insert(0, log_dir / LOG_NAME)
    siblings = {p.parent.name for p in logs if p.parent != log_dir}
    processes = []
    for log in logs:
        folder = log.parent.name if log.parent != log_dir else ""
        exe, instance = process_identity(folder, siblings) if folder else ("", None)
        warnings: list[str] = []
        try:
            lines, ended = _read_lines(log, warnings)
        except OSError as exc:
            proc = TraceProcess(pid=None, source=SOURCE_ZLUDA_LOG, file=str(log), complete=False, name=folder)
            proc.warnings.append(f"cannot read {log}: {exc.strerror or exc}")
            proc.executable, proc.instance = exe, instance
            processes.append(proc)
            continue
        proc = parse_log_lines(lines, file=str(log), name=folder)
        proc.executable, proc.instance = exe, instance
        proc.warnings = warnings + proc.warnings
        proc.complete = ended
        processes.append(proc)
    processes.sort(key=lambda p: (p.executable, p.instance if p.instance is not None else 1 << 30, p.name))
    return processes
