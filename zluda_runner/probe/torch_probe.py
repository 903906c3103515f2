"""Run a torch probe script (``torch_ops.py``, ``torch_opinfo.py``) in the target interpreter,
crash-isolated, and read its report.

The interpreter reports each op as it starts and ends. If it dies during one, that one is ``crashed``
(with the signal); if one runs past ``op_timeout`` the interpreter is killed and it is ``timeout``;
either way a fresh interpreter resumes after it (the ids already reported are passed in a file).
When ``budget`` seconds are spent, what was not reached is ``skipped`` (the op then running: ``cut``).
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

SCRIPT = Path(__file__).resolve().parent / "torch_ops.py"
DEFAULT_TORCH_TIMEOUT = 900.0  # first PTX compiles through ZLUDA take minutes
MAX_RESTARTS = 200
Progress = Callable[[CaseResult], None]


def run_torch_probe(
    python: str, env: Mapping[str, str], device: str = "cuda", timeout: float = DEFAULT_TORCH_TIMEOUT
) -> ProbeReport:
    """Run the torch ops under ``python`` with ``env``; compare each with the CPU result.

    An op that kills the interpreter is ``crashed`` (with the signal) and a fresh interpreter runs
    the ops after it; one still running at ``timeout`` (for the whole probe) is ``timeout`` and
    the ops not reached are ``skipped``.
    """
    return run_probe_script(python, env, SCRIPT, ["--device", device], op_timeout=timeout,
                            startup_timeout=timeout, budget=timeout, cut=TIMEOUT)


def _op_and_dtype(case_id: str) -> tuple[str, str]:
    """``op@dtype`` (the OpInfo probe's ids), else the id alone (the quick probe's)."""
    op, at, dtype = case_id.rpartition("@")
    return (op, dtype) if at else (case_id, "")


def _case(case_id: str, area: str, status: CaseStatus, detail: str, signal: str | None = None) -> CaseResult:
    op, dtype = _op_and_dtype(case_id)
    return CaseResult(case_id, area, f"{op} ({dtype})" if dtype else op, status, detail, signal=signal,
                      dtype=dtype)


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
def run_probe_script(
    python: str,
    env: Mapping[str, str],
    script: Path,
    args: Sequence[str],
    *,
    op_timeout: float,
    startup_timeout: float,
    budget: float | None = None,
    cut: CaseStatus = SKIPPED,
    progress: Progress | None = None,
) -> ProbeReport:
    """``python script *args --done-file F`` until every op it plans is reported, restarted after
    each op that crashed or ran past ``op_timeout``."""
    started = time.monotonic()
    environment: dict[str, str] = {}
    load: LoadResult | None = None
    warnings: list[str] = []
    end_by = started + budget if budget else None
    done: dict[str, CaseResult] = {}
    planned: list[str] | None = None
    areas: dict[str, str] = {}
    restarts = 0
    with tempfile.TemporaryDirectory(prefix="zr-torch-probe-") as tmp:
        done_file = Path(tmp) / "done.txt"
        while True:
            done_file.write_text("".join(f"{i}\n" for i in done), encoding="utf-8")
            proc = _interpreter([python, str(script), *args, "--done-file", str(done_file)], env)
            running: str | None = None
            running_since = time.monotonic()
            outcome = "eof"
            started_up = False  # this interpreter has said "info" (imports and database done)
            while True:
                if running is not None:
                    limit = running_since + op_timeout
                else:
                    limit = time.monotonic() + (op_timeout if started_up else startup_timeout)
                if end_by is not None:
                    limit = min(limit, end_by)
                event = proc.event(limit)
                if event is None:
                    outcome = "budget" if end_by is not None and time.monotonic() >= end_by else "timeout"
                    break
                kind = event["event"]
                event_id = str(event.get("id"))
                if kind in ("begin", "op") and (planned is None or event_id not in planned):
                    continue  # not one of ours: only planned ops are reported
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
                if outcome in ("timeout", "budget"):
                    waited = startup_timeout if outcome == "timeout" else budget
                    load = LoadResult(TIMEOUT, f"the torch probe did not start within {waited:g} s"
                                      + (f": {tail}" if tail else ""))
                else:
                    sig = ended_by(rc)
                    what = f"killed by {sig}" if sig else f"exited with {rc} without a report"
                    load = LoadResult(CRASHED if sig else FAIL, f"the torch probe {what}: {tail}")
                break
            if outcome == "end" and rc:
                warnings.append(f"the probe exited with {rc} after reporting")
            if outcome == "budget" and running is not None and cut != SKIPPED:
                done[running] = _case(running, areas.get(running, ""), cut, f"still running at {budget:g} s")
            if outcome in ("end", "unavailable", "budget") or running is None:
                if outcome == "eof" and running is None and len(done) < len(planned):
                    warnings.append(f"the torch probe stopped between ops (exit {rc}): {tail[-300:]}")
                break
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
            crash = _case(running, areas.get(running, ""), status, detail, sig)
            done[running] = crash
            if progress is not None:
                progress(crash)
            restarts += 1
            if restarts > MAX_RESTARTS:
                warnings.append(f"gave up after {MAX_RESTARTS} interpreter restarts")
                break
    why = "not run: the time budget ran out" if end_by is not None else "not run"
    cases = tuple(done.get(case_id) or _case(case_id, areas.get(case_id, ""), SKIPPED, why)
                  for case_id in planned or [])
    return ProbeReport(kind=KIND_TORCH, target=python, load=load, cases=cases, environment=environment,
                       warnings=tuple(warnings), duration_s=time.monotonic() - started)


def _result(event: dict[str, Any], areas: dict[str, str]) -> CaseResult:
    case_id = str(event.get("id"))
    title = f"{event.get('op', case_id)} ({event.get('dtype', '')})"
    return op_case(event, title, areas.get(case_id) or str(event.get("area", "")))
