"""The target interpreter's torch: which version, built for CUDA, ROCm or the CPU (found as
:mod:`zluda_runner.inspection` finds it: never imported)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zluda_runner.core.errors import TargetError
from zluda_runner.doctor.model import Check, DoctorOptions, Status
from zluda_runner.inspection.interpreter import probe_interpreter, torch_info


def check_torch(opts: DoctorOptions) -> Check:
    """The target's torch as inspection finds it (``torch/version.py``, read, never imported)."""
    python = opts.python
    try:
        facts = probe_interpreter(python)
        if facts.torch_path is None:
            return torch_verdict(python, {"torch": None, "error": "not installed"})
        torch = torch_info(Path(facts.torch_path), facts.torch_version_py)
    except TargetError as exc:
        return torch_verdict(python, {"torch": None, "error": exc.message})
    return torch_verdict(python, {"torch": torch.version, "cuda": torch.cuda, "hip": torch.hip})


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


