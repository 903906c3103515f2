"""Run the driver probe catalogue against one libcuda, each case isolated from the others.

One worker process runs the cases one after another (fast: one interpreter start) and
reports each result over a pipe. If a case kills the worker (a signal) it is ``crashed``; if
it does not answer within the timeout the worker is killed and the case is ``timeout``.
Either way a fresh worker takes the remaining cases (each case sets itself up from nothing),
and the failed case keeps the calls it made before it died. The timeout covers loading the
library and each case; the interpreter's own start has a separate, generous limit. The cuBLAS
cases call the cuBLAS beside the driver (:func:`zluda_runner.probe.blas.cublas_beside`).
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from zluda_runner.core.errors import ProbeError
from zluda_runner.core.proctree import ended_by
from zluda_runner.probe.bindings import DRIVER_API, RESULT_NAMES, CallRecord
from zluda_runner.probe.blas import cublas_beside
from zluda_runner.probe.cases import CASES_BY_ID, CATALOGUE, Case
from zluda_runner.probe.channel import ProbeChild, reaping
from zluda_runner.probe.coverage import symbol_coverage
from zluda_runner.probe.model import (
    CRASHED,
    ERROR,
    FAIL,
    KIND_DRIVER,
    PASS,
    SKIPPED,
    TIMEOUT,
    CaseResult,
    CaseStatus,
    LoadResult,
    ProbeReport,
    is_status,
)

DEFAULT_TIMEOUT = 60.0  # a first PTX compile through ZLUDA can be slow
STARTUP_TIMEOUT = 120.0  # the worker interpreter's start (imports), before it touches the library
MAX_CALLS = 10_000  # calls kept per case
MAX_DETAIL = 2000
Progress = Callable[[CaseResult], None]


# The driver file a probe loads by default on this platform: what hints name.
DRIVER_NAMES = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so")
DRIVER_NAME = DRIVER_NAMES[0]
LOADER_CALL = "LoadLibrary" if sys.platform == "win32" else "dlopen"
WORKER = (sys.executable, "-m", "zluda_runner.probe.worker")  # + libcuda, [--cublas PATH], event descriptor


class _Malformed(Exception):
    """A frame that carried the token but not a usable event: this case's result is unreadable."""


class _Worker(ProbeChild):
    """The worker process, and the calls of the case it runs as it reports them."""

    def __init__(self, libcuda: Path, cublas: Path | None, env: dict[str, str] | None) -> None:
        token = secrets.token_hex(16)
        argv = [*WORKER, str(libcuda), *(["--cublas", str(cublas)] if cublas else [])]
        super().__init__(argv, env, prefix=token.encode() + b" ", channel=True, stdin=True)
        self.send(token)
        self.last_call: str | None = None
        self.done_calls: list[CallRecord] = []

    def read_event(self, deadline: float) -> dict[str, Any] | None:
        """The next event; ``{"event": "eof"}`` when the worker is gone, None at the deadline."""
        event = self.event(deadline)
        if event is None:
            return None
        if event["event"] == "calling":
            function = event.get("function")
            self.last_call = function if isinstance(function, str) else None
        elif event["event"] == "called":
            self.last_call = None
            with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):
                if len(self.done_calls) < MAX_CALLS:
                    self.done_calls.append(CallRecord.from_dict(event["call"]))
        return event


def _start(libcuda: Path, cublas: Path | None, timeout: float,
           env: dict[str, str] | None) -> tuple[_Worker | None, LoadResult]:
    worker = _Worker(libcuda, cublas, env)
    event = worker.read_event(time.monotonic() + max(timeout, STARTUP_TIMEOUT))
    if event is not None and event.get("event") == "started":
        event = worker.read_event(time.monotonic() + timeout)
    while event is not None and event["event"] not in ("loaded", "load_failed", "eof", "garbled"):
        event = worker.read_event(time.monotonic() + timeout)
    if event is None:
        worker.finish(kill=True)
        return None, LoadResult(TIMEOUT, f"loading {libcuda} did not finish within {timeout:g} s")
    if event["event"] == "loaded":
        return worker, LoadResult(PASS, "")
    if event["event"] == "load_failed":
        worker.finish()
        return None, LoadResult(FAIL, f"{LOADER_CALL} failed: {str(event.get('error', ''))[:MAX_DETAIL]}")
    if event["event"] == "garbled":
        worker.finish(kill=True)
        return None, LoadResult(FAIL, f"the worker's report on loading {libcuda} was unreadable: "
                                      f"{event.get('detail', '')}")
    tail = worker.output_tail(400)
    rc = worker.finish()
    sig = ended_by(rc)
    what = f"killed by {sig}" if sig else f"exited with {rc}"
    return None, LoadResult(CRASHED, f"the process loading {libcuda} {what}" + (f": {tail}" if tail else ""))


def _from_event(case: Case, event: dict[str, Any]) -> CaseResult:
    """The worker's result for ``case``; :class:`_Malformed` unless it is one, field by field."""
    if event.get("id") != case.id:
        raise _Malformed(f"a result for {str(event.get('id'))[:80]!r}, not {case.id}")
    status, detail, code = event.get("status"), event.get("detail", ""), event.get("result_code")
    if not is_status(status):
        raise _Malformed(f"status {str(status)[:40]!r}")
    if not isinstance(detail, str):
        raise _Malformed("a detail that is not text")
    if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
        raise _Malformed(f"result code {str(code)[:40]!r}")
    api = event.get("result_api", DRIVER_API)
    if not isinstance(api, str) or api not in RESULT_NAMES:
        raise _Malformed(f"result API {str(api)[:40]!r}")
    errors = [event.get("max_abs_err"), event.get("max_rel_err")]
    if any(e is not None and (not isinstance(e, (int, float)) or isinstance(e, bool)) for e in errors):
        raise _Malformed("an error figure that is not a number")
    calls, duration = event.get("calls", []), event.get("duration_s", 0.0)
    if not isinstance(calls, list) or not isinstance(duration, (int, float)) or isinstance(duration, bool):
        raise _Malformed("calls or duration of the wrong type")
    try:
        records = [CallRecord.from_dict(c) for c in calls[:MAX_CALLS]]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _Malformed(f"a call record: {exc}") from exc
    return CaseResult(
        id=case.id,
        area=case.area,
        title=case.title,
        status=status,
        detail=detail[:MAX_DETAIL],
        result_code=code,
        result_name=RESULT_NAMES[api](code) if code is not None else None,
        calls=tuple(records),
        duration_s=float(duration),
        max_abs_err=None if errors[0] is None else float(errors[0]),
        max_rel_err=None if errors[1] is None else float(errors[1]),
    )


@reaping()  # children left by an exception (Ctrl-C) are killed with their groups
def run_probe(
    libcuda: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    case_ids: Sequence[str] | None = None,
    env: dict[str, str] | None = None,
    progress: Progress | None = None,
) -> ProbeReport:
    """Probe ``libcuda`` (and the cuBLAS beside it): every case of the catalogue (or ``case_ids``), plus
    symbol coverage."""
    libcuda = Path(libcuda).absolute()  # dlopen searches for a name without a slash
    if not libcuda.is_file():
        raise ProbeError(f"no libcuda to probe at {libcuda}",
                         hint=f"pass {{opt:libcuda PATH}} to the driver library to probe ({DRIVER_NAME})")
    unknown = [c for c in case_ids or () if c not in CASES_BY_ID]
    if unknown:
        raise ProbeError(
            f"unknown probe case(s): {', '.join(unknown)}", hint="known cases: " + ", ".join(CASES_BY_ID)
        )
    cases = [CASES_BY_ID[c] for c in case_ids] if case_ids else list(CATALOGUE)
    started = time.monotonic()
    coverage = symbol_coverage(libcuda)
    cublas = cublas_beside(libcuda)
    results: dict[str, CaseResult] = {}
    ran: list[CaseResult] = []

    def record(result: CaseResult) -> None:
        results[result.id] = result
        ran.append(result)
        if progress is not None:
            progress(result)

    worker, load = _start(libcuda, cublas, timeout, env)
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
            worker, again = _start(libcuda, cublas, timeout, env)
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
        garbled = ""
        if event is not None and event["event"] == "result":
            try:
                record(_from_event(case, event))
                continue
            except _Malformed as exc:
                garbled = f"the worker's result was unreadable: {exc}"
        elif event is not None and event["event"] != "eof":
            garbled = f"the worker's report was unreadable: {event.get('detail', event['event'])}"
        if garbled:  # this case alone: a fresh worker takes the next one
            worker.finish(kill=True)
            record(CaseResult(case.id, case.area, case.title, ERROR, garbled, calls=tuple(worker.done_calls),
                              duration_s=time.monotonic() - t0))
            worker = None
            continue
        # the worker died or hung during this case
        last = worker.last_call
        status: CaseStatus
        if event is None:
            worker.finish(kill=True)
            status, detail, sig = TIMEOUT, f"no answer within {timeout:g} s", None
        else:
            tail = worker.output_tail(400)
            rc = worker.finish()
            sig = ended_by(rc)
            status = CRASHED
            detail = f"worker killed by {sig}" if sig else f"worker exited with {rc}"
            if tail:
                detail += f"; output: {tail}"
        if last:
            detail += f" (in {last})"
        calls = (*worker.done_calls, *([CallRecord(last, None, status)] if last else []))
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
    return ProbeReport(kind=KIND_DRIVER, target=str(libcuda), load=load, cases=tuple(ran),
                       coverage=coverage, duration_s=time.monotonic() - started)
