"""Run the torch-level probe (``torch_ops.py``) in the target interpreter and read its report."""

from __future__ import annotations

import time
from collections.abc import Mapping
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
    LoadResult,
    ProbeReport,
    op_case,
    str_dict,
    str_list,
)
from zluda_runner.probe.target_side import MARKER

SCRIPT = Path(__file__).resolve().parent / "torch_ops.py"
DEFAULT_TORCH_TIMEOUT = 900.0  # first PTX compiles through ZLUDA take minutes


def _run_once(
    python: str, env: Mapping[str, str], device: str, skip: list[str], timeout: float
) -> tuple[list[dict[str, Any]], int | None, str]:
    """One interpreter run: its events, return code (None: timed out) and output tail.

    The interpreter leads its own process group, killed whole when it ends; its exit is seen
    even while something it forked holds stdout; only a tail of its output is kept."""
    argv = [python, str(SCRIPT), "--device", device] + (["--skip", ",".join(skip)] if skip else [])
    try:
        child = ProbeChild(argv, env, prefix=MARKER.encode())
    except (FileNotFoundError, PermissionError) as exc:
        raise ProbeError(
            f"target interpreter {python} cannot be run: {exc}",
            hint="pass {opt:python} with the interpreter that runs the workload",
        ) from exc
    planned: set[str] | None = None
    kept = 0

    def keep(event: dict[str, Any]) -> bool:
        """The first ``info``, then ``begin``/``op`` of its ops and ``end``: a bounded number."""
        nonlocal planned, kept
        if event["event"] == "info":
            if planned is None:
                planned = set(str_list(event.get("ops")))
                return True
            return False
        if planned is None or kept > 4 * len(planned) + 4:
            return False
        ours = event["event"] == "end" or (
            event["event"] in ("begin", "op") and str(event.get("id")) in planned
        )
        kept += ours
        return ours

    exited = False
    try:
        events, exited = child.run_to_end(time.monotonic() + max(timeout, 0.1), keep)
    finally:
        tail = child.tail(1500)
        rc = child.finish(kill=True)
    return events, rc if exited else None, tail


def run_torch_probe(
    python: str, env: Mapping[str, str], device: str = "cuda", timeout: float = DEFAULT_TORCH_TIMEOUT
) -> ProbeReport:
    """Run the torch ops under ``python`` with ``env``; compare each with the CPU result.

    An op that kills the interpreter is ``crashed`` (with the signal) and a fresh interpreter runs
    the ops after it; one still running at ``timeout`` (for the whole probe) is ``timeout`` and
    the ops not reached are ``skipped``.
    """
    with reaping():
        return _run_torch_probe(python, env, device, timeout)


def _run_torch_probe(
    python: str, env: Mapping[str, str], device: str = "cuda", timeout: float = DEFAULT_TORCH_TIMEOUT
) -> ProbeReport:
    started = time.monotonic()
    done: dict[str, CaseResult] = {}
    planned: list[str] | None = None
    areas: dict[str, str] = {}
    environment: dict[str, str] = {}
    load: LoadResult | None = None
    warnings: list[str] = []
    while True:
        left = timeout - (time.monotonic() - started)
        events, rc, tail = _run_once(python, env, device, list(done), left)
        info = next((e for e in events if e.get("event") == "info"), None)
        if info is not None and planned is None:
            planned = str_list(info.get("ops"))
            areas = str_dict(info.get("areas"))
            environment = {
                k: str(info[k]) for k in ("torch", "device", "device_name", "cuda_build") if info.get(k)
            }
            if not info.get("available"):
                why = info.get("reason", "")
                load = LoadResult(UNAVAILABLE, f"CUDA is not available in {python}: {why}")
                break
        running: str | None = None
        for event in events:
            op_id = str(event.get("id"))
            if planned is not None and op_id not in planned:
                continue  # not one of ours: only planned ops are reported
            if event["event"] == "begin":
                running = op_id
            elif event["event"] == "op":
                area = areas.get(op_id) or str(event.get("area", ""))
                done[op_id] = op_case(event, f"{op_id} ({event.get('dtype', '')})", area)
                running = None
        ended = any(e.get("event") == "end" for e in events)
        if planned is None:  # died or hung before saying anything: nothing to retry
            if rc is None:
                load = LoadResult(
                    TIMEOUT, f"the torch probe ran past {timeout:g} s" + (f": {tail}" if tail else "")
                )
            else:
                sig = ended_by(rc)
                what = f"killed by {sig}" if sig else f"exited with {rc} without a report"
                load = LoadResult(CRASHED if sig else FAIL, f"the torch probe {what}: {tail}")
            break
        load = LoadResult(PASS, "")
        if ended:
            if rc:
                warnings.append(f"the probe exited with {rc} after reporting")
            break
        if running is None:  # between ops, or cut off at the start
            warnings.append(f"the probe stopped outside an op (exit {rc}): {tail[-300:]}")
            break
        area = areas.get(running, "")
        if rc is None:
            done[running] = CaseResult(running, area, running, TIMEOUT, f"still running at {timeout:g} s")
            break
        sig = ended_by(rc)
        what = f"killed by {sig}" if sig else f"exited with {rc}"
        detail = f"the interpreter was {what} during this op: {tail[-500:]}"
        done[running] = CaseResult(running, area, running, CRASHED, detail, signal=sig)
    why = "not run: the probe ran out of time"
    cases = tuple(done.get(op_id) or CaseResult(op_id, areas.get(op_id, ""), op_id, SKIPPED, why)
                  for op_id in planned or [])
    return ProbeReport(kind=KIND_TORCH, target=python, load=load, cases=cases, environment=environment,
                       warnings=tuple(warnings), duration_s=time.monotonic() - started)
