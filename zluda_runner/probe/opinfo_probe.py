"""Run the OpInfo torch-op probe (``torch_opinfo.py``) in the target interpreter, crash-isolated.

The interpreter reports each (op, dtype) as it starts and ends. If it dies during one, that one
is ``crashed`` (with the signal); if one runs past ``op_timeout`` the interpreter is killed and
it is ``timeout``; either way a fresh interpreter resumes after it (the ids already reported are
passed in a file). When ``budget`` seconds are spent, what was not reached is ``skipped``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from zluda_runner.core.errors import ProbeError
from zluda_runner.core.proctree import ended_by
from zluda_runner.probe.channel import ProbeChild, reaping
from zluda_runner.probe.model import (
    CRASHED,
    FAIL,
    KIND_TORCH,
    PASS,
    SKIPPED,
    TIMEOUT,
    UNAVAILABLE,
    CaseResult,
    CaseStatus,
    LoadResult,
    ProbeReport,
    op_case,
    str_dict,
    str_list,
)
from zluda_runner.probe.target_side import MARKER

SCRIPT = Path(__file__).resolve().parent / "torch_opinfo.py"
DEFAULT_DTYPES = ("float32", "float16", "bfloat16")
DEFAULT_OP_TIMEOUT = 300.0  # a first kernel compile through ZLUDA can take minutes
STARTUP_TIMEOUT = 600.0  # importing torch and building the OpInfo database
MAX_RESTARTS = 200
Progress = Callable[[CaseResult], None]


def _result(event: dict[str, Any], areas: dict[str, str]) -> CaseResult:
    case_id = str(event.get("id"))
    title = f"{event.get('op', case_id)} ({event.get('dtype', '')})"
    return op_case(event, title, areas.get(case_id) or str(event.get("area", "")))


def _op_and_dtype(case_id: str) -> tuple[str, str]:
    op, _, dtype = case_id.rpartition("@")
    return op, dtype


def _interpreter(argv: list[str], env: Mapping[str, str]) -> ProbeChild:
    """One run of the script, in its own process group, its output bounded (see :mod:`.channel`)."""
    try:
        return ProbeChild(argv, env, prefix=MARKER.encode())
    except (FileNotFoundError, PermissionError) as exc:
        raise ProbeError(
            f"target interpreter {argv[0]} cannot be run: {exc}",
            hint="pass {opt:python} with the interpreter that runs the workload",
        ) from exc


@reaping()  # children left by an exception (Ctrl-C) are killed with their groups
def run_opinfo_probe(
    python: str,
    env: Mapping[str, str],
    *,
    device: str = "cuda",
    dtypes: Sequence[str] = DEFAULT_DTYPES,
    ops: Sequence[str] = (),
    samples: int = 1,
    budget: float | None = None,
    op_timeout: float = DEFAULT_OP_TIMEOUT,
    progress: Progress | None = None,
) -> ProbeReport:
    """Each OpInfo op (matching ``ops`` patterns) x dtype on ``device`` against the CPU reference."""
    bad = [d for d in dtypes if d not in ("float32", "float16", "bfloat16", "float64")]
    if bad or not dtypes:
        raise ProbeError(
            f"unsupported dtype(s) for the op probe: {', '.join(bad) or '(none)'}",
            hint="pass {opt:dtypes} with any of float32, float16, bfloat16, float64",
        )
    started = time.monotonic()
    environment: dict[str, str] = {}
    load: LoadResult | None = None
    warnings: list[str] = []
    end_by = started + budget if budget else None
    done: dict[str, CaseResult] = {}
    planned: list[str] | None = None
    areas: dict[str, str] = {}
    restarts = 0
    with tempfile.TemporaryDirectory(prefix="zr-opinfo-") as tmp:
        done_file = Path(tmp) / "done.txt"
        while True:
            done_file.write_text("".join(f"{i}\n" for i in done), encoding="utf-8")
            argv = [python, str(SCRIPT), "--device", device, "--dtypes", ",".join(dtypes)]
            argv += ["--ops", ",".join(ops), "--samples", str(samples), "--done-file", str(done_file)]
            proc = _interpreter(argv, env)
            running: str | None = None
            running_since = time.monotonic()
            outcome = "eof"
            started_up = False  # this interpreter has said "info" (imports and database done)
            while True:
                if running is not None:
                    limit = running_since + op_timeout
                else:
                    limit = time.monotonic() + (op_timeout if started_up else STARTUP_TIMEOUT)
                if end_by is not None:
                    limit = min(limit, end_by)
                event = proc.event(limit)
                if event is None:
                    outcome = "budget" if end_by is not None and time.monotonic() >= end_by else "timeout"
                    break
                kind = event["event"]
                event_id = str(event.get("id"))
                if kind in ("begin", "op") and (planned is None or event_id not in planned):
                    continue  # not one of ours: only planned (op, dtype) pairs are reported
                if kind == "info":
                    started_up = True
                if kind == "info" and planned is None:
                    planned = str_list(event.get("ops"))
                    areas = str_dict(event.get("areas"))
                    environment = {
                        k: str(event[k])
                        for k in ("torch", "device", "device_name", "cuda_build")
                        if event.get(k)
                    }
                    if not event.get("available"):
                        load = LoadResult(UNAVAILABLE, f"in {python}: {event.get('reason', '')}")
                        outcome = "unavailable"
                        break
                    load = LoadResult(PASS, "")
                elif kind == "begin":
                    running, running_since = event_id, time.monotonic()
                elif kind == "op":
                    result = _result(event, areas)
                    done[result.id] = result
                    running = None
                    if progress is not None:
                        progress(result)
                elif kind in ("end", "eof"):
                    outcome = str(kind)
                    break
            tail = proc.tail()
            rc = proc.finish(kill=outcome in ("timeout", "budget", "unavailable"))
            if planned is None:  # died or hung before saying what it would run
                if outcome == "timeout":
                    load = LoadResult(
                        TIMEOUT, f"the op probe did not start within {STARTUP_TIMEOUT:g} s"
                    )
                elif outcome != "budget":
                    sig = ended_by(rc)
                    what = f"killed by {sig}" if sig else f"exited with {rc} without a report"
                    load = LoadResult(CRASHED if sig else FAIL, f"the op probe {what}: {tail}")
                break
            if outcome in ("end", "unavailable", "budget") or running is None:
                if outcome == "eof" and running is None and len(done) < len(planned):
                    warnings.append(f"the op probe stopped between ops (exit {rc}): {tail[-300:]}")
                break
            op, dtype = _op_and_dtype(running)
            status: CaseStatus
            if outcome == "timeout":
                status, sig, detail = TIMEOUT, None, f"still running after {op_timeout:g} s"
            else:
                sig = ended_by(rc)
                status = CRASHED
                detail = (
                    f"the interpreter was {'killed by ' + sig if sig else f'exited with {rc}'} during this op"
                )
                detail += f": {tail[-500:]}" if tail else ""
            crash = CaseResult(running, areas.get(running, ""), f"{op} ({dtype})", status, detail, signal=sig,
                               dtype=dtype)
            done[running] = crash
            if progress is not None:
                progress(crash)
            restarts += 1
            if restarts > MAX_RESTARTS:
                warnings.append(f"gave up after {MAX_RESTARTS} interpreter restarts")
                break
    why = "not run: the time budget ran out" if end_by is not None else "not run"
    cases = tuple(done.get(case_id) or _not_run(case_id, areas, why) for case_id in planned or [])
    return ProbeReport(kind=KIND_TORCH, target=python, load=load, cases=cases, environment=environment,
                       warnings=tuple(warnings), duration_s=time.monotonic() - started)


def _not_run(case_id: str, areas: Mapping[str, str], why: str) -> CaseResult:
    op, dtype = _op_and_dtype(case_id)
    return CaseResult(case_id, areas.get(case_id, ""), f"{op} ({dtype})", SKIPPED, why, dtype=dtype)
