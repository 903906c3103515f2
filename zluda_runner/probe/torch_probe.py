"""Run the torch-level probe (``torch_ops.py``) in the target interpreter and read its report."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from ..errors import ProbeError
from .model import CRASHED, FAIL, KIND_TORCH, PASS, TIMEOUT, UNAVAILABLE, CaseResult, LoadResult, ProbeReport
from .runner import _signal_name

SCRIPT = Path(__file__).resolve().parent / "torch_ops.py"
MARKER = "ZLUDA_RUNNER_TORCH_PROBE "
DEFAULT_TORCH_TIMEOUT = 900.0  # first PTX compiles through ZLUDA take minutes


def _tail(text: str, limit: int = 1500) -> str:
    return text.strip()[-limit:]


def run_torch_probe(
    python: str, env: Mapping[str, str], device: str = "cuda", timeout: float = DEFAULT_TORCH_TIMEOUT
) -> ProbeReport:
    """Run the torch ops under ``python`` with ``env``; compare each with the CPU result."""
    report = ProbeReport(kind=KIND_TORCH, target=python)
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [python, str(SCRIPT), "--device", device],
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise ProbeError(
            f"target interpreter {python} not found",
            hint="pass --python with the interpreter that runs the workload",
        ) from exc
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else (exc.stdout or b"").decode(errors="replace")
        report.load = LoadResult(
            TIMEOUT, f"the torch probe ran past {timeout:g} s" + (f": {_tail(out)}" if out else "")
        )
        report.duration_s = time.monotonic() - started
        return report
    report.duration_s = time.monotonic() - started
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith(MARKER)), None)
    if line is None:
        sig = _signal_name(proc.returncode)
        status = CRASHED if sig else FAIL
        what = f"killed by {sig}" if sig else f"exited with {proc.returncode} without a report"
        report.load = LoadResult(status, f"the torch probe {what}: {_tail(proc.stderr or proc.stdout)}")
        return report
    info = json.loads(line[len(MARKER) :])
    report.environment = {
        k: str(info[k]) for k in ("torch", "device", "device_name", "cuda_build") if info.get(k)
    }
    if not info.get("available"):
        report.load = LoadResult(UNAVAILABLE, f"CUDA is not available in {python}: {info.get('reason', '')}")
        return report
    report.load = LoadResult(PASS, "")
    for op in info.get("ops", []):
        report.cases.append(
            CaseResult(
                id=op["id"],
                area=op.get("area", ""),
                title=f"{op['id']} ({op.get('dtype', '')})",
                status=op["status"],
                detail=op.get("detail", ""),
                max_abs_err=op.get("max_abs_err"),
                max_rel_err=op.get("max_rel_err"),
                duration_s=float(op.get("duration_s", 0.0)),
            )
        )
    if proc.returncode != 0:
        report.warnings.append(f"the probe exited with {proc.returncode} after reporting")
    report.summarise()
    return report
