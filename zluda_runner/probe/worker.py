"""The probe's worker process: loads one libcuda and runs the cases the parent names.

Arguments: the libcuda, ``--cublas PATH`` where the driver has a cuBLAS beside it (loaded by the first
cuBLAS case), the event descriptor. Protocol: the parent writes a random token, then case ids, one
per line, on stdin; the worker writes JSON lines, each after the token and a space, on the private
pipe its last argument names (a descriptor number, on Windows an inherited handle; never stdout,
which the library may use). The library under test can write to that
descriptor too, but it is never shown the token (read before the library is loaded; not in argv
or the environment), so its lines are output, never events:
``{"event": "started"}`` once the interpreter is up, ``{"event": "loaded"}`` or
``{"event": "load_failed", "error": ...}``, then per case ``{"event": "calling", "function": ...}``
before each driver (or cuBLAS) call, ``{"event": "called", "call": {...}}`` after it (so the calls
of a case that crashes or hangs are known), and ``{"event": "result", ...}``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from zluda_runner.core.proctree import open_inherited
from zluda_runner.probe.bindings import CallFailed, Driver, MissingFunction, make_ffi
from zluda_runner.probe.blas import Blas, NotLoaded
from zluda_runner.probe.cases import CASES_BY_ID, CheckFailed, NotApplicable, Setup
from zluda_runner.probe.model import FAIL, MISSING, PASS, SKIPPED


class Channel:
    """Event lines to the parent: one ``write`` each (atomic up to PIPE_BUF), after the token."""

    def __init__(self, fd: int, token: bytes) -> None:
        self.fd, self.prefix = fd, token + b" "

    def emit(self, **event: Any) -> None:
        data = memoryview(self.prefix + json.dumps(event).encode() + b"\n")
        while data:
            data = data[os.write(self.fd, data) :]


def run_case(driver: Driver, setup: Setup, case_id: str) -> dict[str, Any]:
    case = CASES_BY_ID[case_id]
    first_call = len(driver.calls)
    started = time.perf_counter()
    result: dict[str, Any] = {"id": case_id, "status": PASS, "detail": ""}
    setup.notes = []
    try:
        result["detail"] = case.run(setup) or ""
    except NotApplicable as exc:
        result.update(status=SKIPPED, detail=f"not applicable here: {exc}")
    except MissingFunction as exc:
        result.update(status=MISSING, detail=str(exc))
    except CallFailed as exc:
        result.update(status=FAIL, detail=str(exc), result_code=exc.code, result_api=exc.api)
    except CheckFailed as exc:
        result.update(status=FAIL, detail=f"wrong result: {exc}")
        result.update({k: v for k, v in (("max_abs_err", exc.max_abs_err), ("max_rel_err", exc.max_rel_err))
                       if v is not None})
    except NotLoaded as exc:
        result.update(status=FAIL, detail=str(exc))
    except Exception as exc:  # a probe case must never take the worker down
        result.update(status=FAIL, detail=f"probe error: {type(exc).__name__}: {exc}")
    if setup.notes:
        result["detail"] = "; ".join(filter(None, [result["detail"], *setup.notes]))
    result["duration_s"] = time.perf_counter() - started
    result["calls"] = [c.to_dict() for c in driver.calls[first_call:]]
    return result


def announce_calls(out: Channel, target: Driver | Blas) -> None:
    """``target``'s calls told to the parent as they are made: ``calling`` before, ``called`` after."""
    original, original_try = target.function, target.try_call

    def announce(name: str) -> Any:
        out.emit(event="calling", function=target.symbol(name))
        return original(name)

    def try_and_tell(name: str, *args: Any) -> int:
        rc = original_try(name, *args)
        out.emit(event="called", call=target.calls[-1].to_dict())
        return rc

    target.function = announce  # type: ignore[method-assign]
    target.try_call = try_and_tell  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    libcuda = os.path.abspath(argv[0])  # a bare name would be searched for
    cublas = os.path.abspath(argv[2]) if len(argv) == 4 and argv[1] == "--cublas" else None
    fd = open_inherited(argv[-1])
    token = sys.stdin.buffer.readline().strip()
    out = Channel(fd, token)
    ffi = make_ffi()  # parsing the declarations is start-up work, not the library's
    out.emit(event="started")
    try:
        driver = Driver.load(libcuda, ffi)
    except OSError as exc:
        out.emit(event="load_failed", error=str(exc))
        return 0
    out.emit(event="loaded")
    blas = Blas(cublas, ffi, driver.calls) if cublas else None
    setup = Setup(driver, blas)
    for target in (driver, blas):
        if target is not None:
            announce_calls(out, target)
    for line in sys.stdin.buffer:
        case_id = line.strip().decode(errors="replace")
        if not case_id:
            continue
        if case_id not in CASES_BY_ID:
            out.emit(event="result", id=case_id, status=SKIPPED, detail="unknown case")
            continue
        out.emit(event="result", **run_case(driver, setup, case_id))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
