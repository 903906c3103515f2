"""Run the driver probe catalogue against one libcuda, each case isolated from the others.

One worker process runs the cases one after another (fast: one interpreter start) and
reports each result over a pipe. If a case kills the worker (a signal) it is ``crashed``; if
it does not answer within the timeout the worker is killed and the case is ``timeout``.
Either way a fresh worker takes the remaining cases (each case sets itself up from nothing),
and the failed case keeps the calls it made before it died. The timeout covers loading the
library and each case; the interpreter's own start has a separate, generous limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from zluda_runner.core.errors import ProbeError
from zluda_runner.data.driver_api import result_name
from zluda_runner.probe.bindings import CallRecord
from zluda_runner.probe.cases import CASES_BY_ID, CATALOGUE, Case
from zluda_runner.probe.coverage import symbol_coverage
from zluda_runner.probe.model import (
    CRASHED,
    FAIL,
    KIND_DRIVER,
    PASS,
    SKIPPED,
    TIMEOUT,
    CaseResult,
    LoadResult,
    ProbeReport,
)

DEFAULT_TIMEOUT = 60.0  # a first PTX compile through ZLUDA can be slow
STARTUP_TIMEOUT = 120.0  # the worker interpreter's start (imports), before it touches the library
Progress = Callable[[CaseResult], None]


def _signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


class _Worker:
    def __init__(self, libcuda: Path, env: dict[str, str] | None) -> None:
        read_fd, write_fd = os.pipe()
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "zluda_runner.probe.worker", str(libcuda), str(write_fd)],
            stdin=subprocess.PIPE,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            pass_fds=(write_fd,),
            env=env,
            text=True,
        )
        os.close(write_fd)
        self.fd = read_fd
        self.buffer = b""
        self.last_call: str | None = None
        self.done_calls: list[CallRecord] = []

    def read_event(self, deadline: float) -> dict[str, Any] | None:
        """The next event; ``{"event": "eof"}`` when the worker is gone, None at the deadline."""
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return {"event": "eof"}
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            return {"event": "garbled", "text": line[:200].decode(errors="replace")}
        if event.get("event") == "calling":
            self.last_call = event.get("function")
        elif event.get("event") == "called":
            self.last_call = None
            with contextlib.suppress(KeyError, TypeError, ValueError):
                self.done_calls.append(CallRecord.from_dict(event["call"]))
        return event

    def send(self, case_id: str) -> bool:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(case_id + "\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def output_tail(self, limit: int = 400) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-limit:].strip()

    def finish(self, kill: bool = False) -> int | None:
        if kill and self.proc.poll() is None:
            self.proc.kill()
        stdin: IO[str] | None = self.proc.stdin
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        os.close(self.fd)
        self.log.close()
        return rc


def _start(libcuda: Path, timeout: float, env: dict[str, str] | None) -> tuple[_Worker | None, LoadResult]:
    worker = _Worker(libcuda, env)
    event = worker.read_event(time.monotonic() + max(timeout, STARTUP_TIMEOUT))
    if event is not None and event.get("event") == "started":
        event = worker.read_event(time.monotonic() + timeout)
    while event is not None and event.get("event") not in ("loaded", "load_failed", "eof"):
        event = worker.read_event(time.monotonic() + timeout)
    if event is None:
        worker.finish(kill=True)
        return None, LoadResult(TIMEOUT, f"loading {libcuda} did not finish within {timeout:g} s")
    if event["event"] == "loaded":
        return worker, LoadResult(PASS, "")
    if event["event"] == "load_failed":
        worker.finish()
        return None, LoadResult(FAIL, f"dlopen failed: {event.get('error', '')}")
    tail = worker.output_tail()
    rc = worker.finish()
    sig = _signal_name(rc)
    what = f"killed by {sig}" if sig else f"exited with {rc}"
    return None, LoadResult(CRASHED, f"the process loading {libcuda} {what}" + (f": {tail}" if tail else ""))


def _from_event(case: Case, event: dict[str, Any]) -> CaseResult:
    code = event.get("result_code")
    return CaseResult(
        id=case.id,
        area=case.area,
        title=case.title,
        status=event["status"],
        detail=event.get("detail", ""),
        result_code=code,
        result_name=result_name(code) if code is not None else None,
        calls=[CallRecord.from_dict(c) for c in event.get("calls", [])],
        duration_s=float(event.get("duration_s", 0.0)),
    )


def run_probe(
    libcuda: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    case_ids: Sequence[str] | None = None,
    env: dict[str, str] | None = None,
    progress: Progress | None = None,
) -> ProbeReport:
    """Probe ``libcuda``: every case of the catalogue (or ``case_ids``), plus symbol coverage."""
    libcuda = Path(libcuda)
    if not libcuda.is_file():
        raise ProbeError(f"no libcuda to probe at {libcuda}", hint="pass --libcuda PATH to a libcuda.so.1")
    unknown = [c for c in case_ids or () if c not in CASES_BY_ID]
    if unknown:
        raise ProbeError(
            f"unknown probe case(s): {', '.join(unknown)}", hint="known cases: " + ", ".join(CASES_BY_ID)
        )
    cases = [CASES_BY_ID[c] for c in case_ids] if case_ids else list(CATALOGUE)
    started = time.monotonic()
    report = ProbeReport(kind=KIND_DRIVER, target=str(libcuda), coverage=symbol_coverage(libcuda))
    results: dict[str, CaseResult] = {}

    def record(result: CaseResult) -> None:
        results[result.id] = result
        report.cases.append(result)
        if progress is not None:
            progress(result)

    worker, load = _start(libcuda, timeout, env)
    report.load = load
    for case in cases:
        blocked = [n for n in case.needs if n in results and results[n].status != PASS]
        if load.status != PASS:
            record(
                CaseResult(case.id, case.area, case.title, SKIPPED, f"libcuda did not load ({load.status})")
            )
            continue
        if blocked:
            why = ", ".join(f"{n} ({results[n].status})" for n in blocked)
            record(CaseResult(case.id, case.area, case.title, SKIPPED, f"needs {why}"))
            continue
        if worker is None:
            worker, again = _start(libcuda, timeout, env)
            if worker is None:
                record(
                    CaseResult(
                        case.id, case.area, case.title, SKIPPED, f"worker restart failed: {again.detail}"
                    )
                )
                continue
        t0 = time.monotonic()
        worker.last_call = None
        worker.done_calls = []
        event: dict[str, Any] | None = {"event": "eof"} if not worker.send(case.id) else None
        deadline = t0 + timeout
        while event is None or event.get("event") in ("calling", "called"):
            event = worker.read_event(deadline)
            if event is None:
                break
        if event is not None and event.get("event") == "result":
            record(_from_event(case, event))
            continue
        # the worker died or hung during this case
        last = worker.last_call
        if event is None:
            worker.finish(kill=True)
            status, detail, sig = TIMEOUT, f"no answer within {timeout:g} s", None
        else:
            tail = worker.output_tail()
            rc = worker.finish()
            sig = _signal_name(rc)
            status = CRASHED
            detail = f"worker killed by {sig}" if sig else f"worker exited with {rc}"
            if tail:
                detail += f"; output: {tail}"
        if last:
            detail += f" (in {last})"
        calls = worker.done_calls + ([CallRecord(last, None, status)] if last else [])
        record(
            CaseResult(
                case.id,
                case.area,
                case.title,
                status,
                detail,
                signal=sig,
                calls=calls,
                duration_s=time.monotonic() - t0,
            )
        )
        worker = None
    if worker is not None:
        worker.finish()
    report.duration_s = time.monotonic() - started
    report.summarise()
    return report
