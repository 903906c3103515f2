"""Read the count files our interposer writes (one per process, ``zr-trace-<pid>-<ns>.txt``).

Format (line oriented, tokens separated by one space, strings written as ``=`` + percent-encoding):
``zluda-runner-trace 1`` · ``pid N`` · ``ppid N`` · ``real =PATH`` · ``warning =TEXT`` · ``arg =ARG``
· ``call SLOT NAME CALLS OK FIRST_FAIL_CODE FIRST_FAIL_AT MISSING`` · ``result SLOT CODE COUNT``
· ``lookup =SYMBOL VERSION FLAGS FOUND COUNT`` · ``export_table HEX32 FOUND COUNT`` · ``end``.
A file without ``end`` (the process was killed while writing) or with bad lines is still read;
what could not be read becomes a warning. A process's first traced call also leaves
``zr-trace-<pid>-<ns>.started`` (``pid``/``ppid``/``started`` lines), which the count file
replaces at exit: a marker left alone is a process that made driver calls but ended without
exit handlers (``_exit()``, ``exec()``, a fatal signal); it is listed, incomplete, with a warning.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from zluda_runner.data.driver_api import result_name
from zluda_runner.trace.model import (
    SOURCE_INTERPOSER,
    ExportTableRequest,
    FirstFailure,
    ProcAddressLookup,
    TraceCall,
    TraceProcess,
)

MAGIC = "zluda-runner-trace"
FILE_GLOB = "zr-trace-*.txt"
PARTIAL_GLOB = "zr-trace-*.txt.part"
MARKER_SUFFIX = ".started"
NO_COUNTS_WARNING = (
    "made driver calls but wrote no counts: it ended without running exit handlers (_exit(), "
    "exec() or a fatal signal), so its calls are missing from this report"
)
_PID_IN_NAME = re.compile(r"zr-trace-(\d+)-")


def _text(token: str) -> str:
    return unquote(token[1:] if token.startswith("=") else token)


def format_guid(hex32: str) -> str:
    """``{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}`` from 32 hex digits (bytes in memory order)."""
    h = hex32.lower()
    if len(h) != 32:
        return h
    return "{" + f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}" + "}"


def parse_count_text(text: str, file: str = "") -> TraceProcess:
    match = _PID_IN_NAME.search(Path(file).name) if file else None
    proc = TraceProcess(pid=int(match.group(1)) if match else None, source=SOURCE_INTERPOSER, file=file)
    lines = text.splitlines()
    if not lines or not lines[0].startswith(MAGIC):
        proc.complete = False
        proc.warnings.append(f"{file or 'trace file'}: not a zluda-runner trace file (no '{MAGIC}' header)")
        return proc
    slots: dict[int, TraceCall] = {}
    ended = False
    for number, line in enumerate(lines[1:], start=2):
        parts = line.split(" ")
        kind, args = parts[0], parts[1:]
        try:
            if kind == "pid":
                proc.pid = int(args[0])
            elif kind == "ppid":
                proc.ppid = int(args[0])
            elif kind == "arg":
                proc.argv.append(_text(args[0]))
            elif kind == "real":
                continue
            elif kind == "warning":
                proc.warnings.append(_text(args[0]))
            elif kind == "call":
                slot, name, calls, ok, fail_code, fail_at, missing = args[:7]
                call = TraceCall(name, int(calls), missing_in_driver=missing == "1")
                if int(ok):
                    call.results["CUDA_SUCCESS"] = int(ok)
                if int(fail_code):
                    call.first_failure = FirstFailure(
                        result_name(int(fail_code)), int(fail_code), int(fail_at)
                    )
                slots[int(slot)] = call
                proc.calls.append(call)
            elif kind == "result":
                result_slot, code, times = (int(a) for a in args[:3])
                owner = slots.get(result_slot)
                if owner is None:
                    raise ValueError(f"result for unknown slot {result_slot}")
                name = result_name(code)
                owner.results[name] = owner.results.get(name, 0) + times
            elif kind == "lookup":
                symbol, version, flags, found, looked_up = args[:5]
                proc.proc_address_lookups.append(
                    ProcAddressLookup(_text(symbol), int(version), int(flags), found == "1", int(looked_up))
                )
            elif kind == "export_table":
                guid, found, requested = args[:3]
                proc.export_tables.append(ExportTableRequest(format_guid(guid), found == "1", int(requested)))
            elif kind == "end":
                ended = True
            elif kind == "started":
                continue
            elif line.strip():
                proc.warnings.append(f"line {number}: unknown record {kind!r}")
        except (ValueError, IndexError) as exc:
            proc.warnings.append(f"line {number}: unreadable ({exc}): {line[:120]!r}")
    if not ended:
        proc.complete = False
        proc.warnings.append("file ends early (process killed while writing?): counts may be incomplete")
    return proc


def read_count_file(path: Path) -> TraceProcess:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as exc:
        proc = TraceProcess(pid=None, source=SOURCE_INTERPOSER, file=str(path), complete=False)
        proc.warnings.append(f"cannot read {path}: {exc}")
        return proc
    return parse_count_text(text, str(path))


def read_count_dir(folder: Path) -> list[TraceProcess]:
    """Every process file in ``folder``: half-written ``.part`` files and markers of processes that
    wrote no counts included, each incomplete and with a warning."""
    folder = Path(folder)
    files = sorted(folder.glob(FILE_GLOB)) + sorted(folder.glob(PARTIAL_GLOB))
    processes = []
    for path in files:
        proc = read_count_file(path)
        if path.name.endswith(".part"):
            proc.complete = False
            proc.warnings.insert(0, "half-written file (the process died while writing its counts)")
        processes.append(proc)
    for marker in sorted(folder.glob(f"zr-trace-*{MARKER_SUFFIX}")):
        stem = marker.name[: -len(MARKER_SUFFIX)]
        if (folder / f"{stem}.txt").exists() or (folder / f"{stem}.txt.part").exists():
            continue  # the counts were written after the marker (a crash can leave both)
        proc = read_count_file(marker)
        proc.complete = False
        proc.warnings = [w for w in proc.warnings if not w.startswith("file ends early")]
        proc.warnings.insert(0, NO_COUNTS_WARNING)
        processes.append(proc)
    return processes
