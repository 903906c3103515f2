"""What both torch probe scripts (torch_ops.py, torch_opinfo.py) do in the TARGET interpreter: the
event lines the runners read and the device set-up.

Standard library only: each script loads it (and output_compare.py) by path from beside itself
(``_beside`` there, a few lines each: a script must load something before it can use it), never
through an installed ``zluda_runner``, which may be missing there or another version. The runners
(torch_probe.py) import :data:`MARKER` from here.
"""

from __future__ import annotations

import json
import sys
from types import ModuleType

MARKER = "ZLUDA_RUNNER_TORCH_PROBE "


def emit(event: str, **fields: object) -> None:
    """One event line, flushed at once: the runner knows what was running if the process dies."""
    sys.stdout.write("\n" + MARKER + json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def emit_no_torch(device: str, exc: BaseException) -> None:
    emit("info", torch=None, device=device, available=False, reason=f"cannot import torch: {exc}", ops=[])


def done_ids(path: str) -> set[str]:
    """The ids the runner has already (``--done-file``: one a line): not run again."""
    if not path:
        return set()
    with open(path, encoding="utf-8") as fh:
        return {line.strip() for line in fh if line.strip()}


def open_device(torch: ModuleType, device: str) -> dict[str, object]:
    """The ``info`` fields for ``device`` (``available`` False with torch's reason when it is not).

    On a CUDA device, TF32 and half-precision reductions are switched off so that float32 means
    float32 and float16/bfloat16 products sum in float32, as on the CPU reference (torch lets cuDNN
    convolutions use TF32 and cuBLAS reduce in half precision by default)."""
    info: dict[str, object] = {"torch": torch.__version__, "device": device, "available": True,
                               "device_name": "", "cuda_build": str(torch.version.cuda)}
    if not device.startswith("cuda"):
        return info
    if not torch.cuda.is_available():
        info["available"] = False
        try:
            torch.cuda.init()
        except Exception as exc:  # the reason CUDA is unavailable, as torch tells it
            info["reason"] = f"CUDA is not available: {type(exc).__name__}: {exc}"
        else:
            info["reason"] = "CUDA is not available: torch.cuda.is_available() is False"
        return info
    info["device_name"] = torch.cuda.get_device_name(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for flag in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        if hasattr(torch.backends.cuda.matmul, flag):  # a torch before the flag had no such reductions
            setattr(torch.backends.cuda.matmul, flag, False)
    return info
