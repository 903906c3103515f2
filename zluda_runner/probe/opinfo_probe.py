"""Run the OpInfo torch-op probe (``torch_opinfo.py``) in the target interpreter, crash-isolated
(:func:`~zluda_runner.probe.torch_probe.run_probe_script`: a crash or an op past ``op_timeout``
is charged to that op, and a fresh interpreter resumes after it; when ``budget`` seconds are spent,
what was not reached is ``skipped``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from zluda_runner.core.errors import ProbeError
from zluda_runner.probe.model import ProbeReport
from zluda_runner.probe.torch_probe import Progress, run_probe_script

SCRIPT = Path(__file__).resolve().parent / "torch_opinfo.py"
DEFAULT_DTYPES = ("float32", "float16", "bfloat16")
DEFAULT_OP_TIMEOUT = 300.0  # a first kernel compile through ZLUDA can take minutes
STARTUP_TIMEOUT = 600.0  # importing torch and building the OpInfo database


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
    args = ["--device", device, "--dtypes", ",".join(dtypes), "--ops", ",".join(ops),
            "--samples", str(samples)]
    return run_probe_script(python, env, SCRIPT, args, op_timeout=op_timeout, startup_timeout=STARTUP_TIMEOUT,
                            budget=budget, progress=progress)
