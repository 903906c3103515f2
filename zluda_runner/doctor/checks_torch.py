"""The target interpreter's torch: which version, built for CUDA, ROCm or the CPU.

torch is imported only in a child (the target interpreter), never in this process.
"""

from __future__ import annotations

from typing import Any

from zluda_runner.core.child import json_line, run_child
from zluda_runner.doctor.model import Check, ResolvedOptions, Status
from zluda_runner.inspection.inspect import inspect_python

PROBE_TIMEOUT_S = 120.0
_TORCH_PROBE = (
    "import json\n"
    "try:\n"
    "    import torch\n"
    "except Exception as e:\n"
    "    print(json.dumps({'torch': None, 'error': repr(e)}))\n"
    "else:\n"
    "    v = torch.version\n"
    "    print(json.dumps({'torch': torch.__version__, 'cuda': getattr(v, 'cuda', None),"
    " 'hip': getattr(v, 'hip', None)}))\n"
)


def probe_torch(python: str, timeout: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """torch version / CUDA / HIP of ``python`` (a child process; torch is never imported here)."""
    result = run_child([python, "-c", _TORCH_PROBE], timeout=timeout)
    if result.start_error is not None or result.timed_out:
        return {"torch": None, "error": f"could not run {python}: {result.describe()}"}
    answer = json_line(result.stdout)
    if not isinstance(answer, dict):
        why = result.stderr.strip()[-300:]
        return {"torch": None, "error": f"{python} exited {result.returncode}: {why}"}
    return answer


def check_torch(opts: ResolvedOptions) -> Check:
    """The target's torch: from ``target.inspect_python`` when that works, else a tiny probe."""
    python = opts.python
    try:
        profile = inspect_python(python)
    except Exception as exc:  # TargetError for CPU/ROCm builds or no torch: ask the probe why
        info = probe_torch(python)
        info["inspect_error"] = getattr(exc, "message", str(exc))
        return torch_verdict(python, info)
    torch = profile.torch
    return torch_verdict(
        python,
        {
            "torch": torch.version if torch else None,
            "cuda": profile.cuda_version or (torch.cuda if torch else None),
            "hip": torch.hip if torch else None,
            "build": profile.build,
        },
    )


def torch_verdict(python: str, info: dict[str, Any]) -> Check:
    version = info.get("torch")
    if not version:
        return Check(
            "torch",
            Status.WARN,
            f"No usable torch in {python} ({info.get('error', 'not installed')})",
            "Point {opt:python} at the interpreter of your workload, or install a CUDA build of torch "
            "(cu118 wheels for the lshqqytiger fork, cu12x for the ZLUDA rewrite).",
            info,
        )
    if info.get("hip"):
        return Check(
            "torch",
            Status.WARN,
            f"torch {version} in {python} is a ROCm build (HIP {info['hip']}): "
            "it runs natively, without ZLUDA",
            "Use it as the B side of {cmd:ab --b-python PY -- SCRIPT}; ZLUDA needs a CUDA build of torch.",
            info,
        )
    if not info.get("cuda"):
        return Check(
            "torch",
            Status.WARN,
            f"torch {version} in {python} is a CPU-only build",
            "Install a CUDA build: pip install torch --index-url https://download.pytorch.org/whl/cu118 "
            "(fork) or .../cu126 (rewrite).",
            info,
        )
    return Check("torch", Status.OK, f"torch {version} (CUDA {info['cuda']}) in {python}", details=info)


