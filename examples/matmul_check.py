"""Check matrix multiplies across dtypes: GPU against a float64 CPU reference.

    python examples/matmul_check.py                 # GPU if torch sees one, else CPU
    zluda-run python examples/matmul_check.py       # through ZLUDA (cuBLAS -> rocBLAS)

Inputs are drawn in float64, rounded to each dtype, and the reference is the float64
product of the *rounded* inputs, so only the multiply's own error is measured.  The
error bound grows with sqrt(K).  Exits 1 when any dtype is outside its bound.
"""

from __future__ import annotations

import argparse
import math
import sys

import torch

try:
    from zluda_runner import ab
except ImportError:
    ab = None

# per-element error bound, scaled by sqrt(K) (inputs are in [-1, 1])
BOUNDS = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2, "bfloat16": 5e-2}


def check(device: str, dtype_name: str, size: int, seed: int) -> tuple[float, float, bool]:
    dtype = getattr(torch, dtype_name)
    gen = torch.Generator().manual_seed(seed)
    a64 = torch.rand(size, size, dtype=torch.float64, generator=gen) * 2 - 1
    b64 = torch.rand(size, size, dtype=torch.float64, generator=gen) * 2 - 1
    a, b = a64.to(dtype), b64.to(dtype)
    reference = a.to(torch.float64) @ b.to(torch.float64)
    result = (a.to(device) @ b.to(device)).to("cpu", torch.float64)
    error = (result - reference).abs().max().item()
    bound = BOUNDS[dtype_name] * math.sqrt(size)
    if ab is not None:
        ab.record(f"matmul_{dtype_name}", result)
    return error, bound, math.isfinite(error) and error <= bound


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--dtypes", default="float32,float16,bfloat16,float64")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.size < 1:
        parser.error("--size must be at least 1")
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda but torch sees no CUDA device", file=sys.stderr)
        return 2
    names = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    unknown = [d for d in names if d not in BOUNDS]
    if unknown:
        parser.error(f"unknown dtype(s) {unknown}; choose from {sorted(BOUNDS)}")
    where = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    print(f"matmul {args.size}x{args.size} on {device} ({where}) vs float64 CPU reference")
    failed = []
    for name in names:
        error, bound, ok = check(device, name, args.size, args.seed)
        print(f"  {name:<9} max abs error {error:.3e}  bound {bound:.3e}  {'ok' if ok else 'MISMATCH'}")
        if not ok:
            failed.append(name)
    if failed:
        print(f"MISMATCH in {', '.join(failed)}", file=sys.stderr)
        return 1
    print("all dtypes within bounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
