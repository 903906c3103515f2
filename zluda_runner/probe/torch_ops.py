"""Torch-level probe, run INSIDE the target interpreter: ``python torch_ops.py [--device DEV]
[--done-file PATH]``.

Depends on nothing but torch and the standard library (it is executed by the workload's own
Python, not imported by zluda-runner). Each op runs on the device and on the CPU reference
(float64 where it makes sense) and is compared by ``output_compare.py`` (beside this script: torch's
rule and per-dtype tolerances). TF32 and half-precision reductions are switched off so that float32
means float32 (torch lets cuDNN convolutions use TF32 by default).
Prints events as JSON on lines starting with MARKER, flushed at once, so that the caller knows
which op was running if the process dies: ``{"event": "info", "torch": ..., "available": bool,
"ops": [ids]}``, per op ``{"event": "begin", "id": ...}`` then ``{"event": "op", ...}``, and
``{"event": "end"}``. Ids listed in ``--done-file`` are not run again (the caller restarts after a crash).
``--device cpu`` (hidden, for tests) compares CPU results with the float64 CPU reference.
"""

import argparse
import importlib.util
import os
import sys
import time
import traceback


def _beside(name):
    """A module from beside this script, loaded by path (as target_side.beside does: this script must
    load something before it can use it): zluda_runner need not be importable in the target."""
    key = f"zluda_runner_target_{name}"
    if key not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
        spec = importlib.util.spec_from_file_location(key, path)
        sys.modules[key] = importlib.util.module_from_spec(spec)  # its dataclasses look it up
        spec.loader.exec_module(sys.modules[key])
    return sys.modules[key]


side = _beside("target_side")
MARKER = side.MARKER
_emit = side.emit


def _ops(torch):
    def seeded(shape, dtype=None, seed=0):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(*shape, generator=g, dtype=dtype or torch.float64)

    def matmul(dtype):
        def run(dev, ref):
            # the reference multiplies the same (rounded) inputs in float64
            a, b = seeded((64, 64), seed=1).to(dtype), seeded((64, 64), seed=2).to(dtype)
            dt = ref if ref else dtype
            return a.to(dev, dt) @ b.to(dev, dt)

        return run

    def gemv(dev, ref):
        # matrix x vector in float32: torch's addmv calls cuBLAS gemv (cublasSgemv), not a GEMM
        # (pytorch/pytorch aten/src/ATen/native/cuda/Blas.cpp@960a6846, addmv_out_cuda_impl). The caveat it
        # checks: upstream ZLUDA's cuBLAS implements GEMM only, gemv returns CUBLAS_STATUS_NOT_SUPPORTED
        # (zluda_blas/src/lib.rs at v5, v6, v7-preview.9; seen in v7-preview.10), so torch.mv fails there.
        # nrm2, the caveat's other function, no torch op reaches: torch's norms are its own reduction kernels
        dt = ref or torch.float32
        a, x = seeded((64, 48), seed=14), seeded((48,), seed=15)
        return torch.mv(a.to(dev, dt), x.to(dev, dt))

    def conv2d(dev, ref):
        dt = ref or torch.float32
        x, w = seeded((2, 3, 16, 16), seed=3), seeded((4, 3, 3, 3), seed=4)
        return torch.nn.functional.conv2d(x.to(dev, dt), w.to(dev, dt), padding=1)

    def sdpa(dev, ref):
        dt = ref or torch.float32
        q, k, v = (seeded((2, 4, 16, 32), seed=s).to(dev, dt) for s in (5, 6, 7))
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    def layer_norm(dev, ref):
        dt = ref or torch.float32
        return torch.nn.functional.layer_norm(seeded((8, 64), seed=8).to(dev, dt), (64,))

    def softmax(dev, ref):
        dt = ref or torch.float32
        return torch.softmax(seeded((8, 64), seed=9).to(dev, dt), dim=-1)

    def fft(dev, ref):
        dt = ref or torch.float32
        return torch.fft.fft(seeded((4, 64), seed=10).to(dev, dt))

    def sort_topk(dev, ref):
        dt = ref or torch.float32
        x = seeded((1024,), seed=11).to(dev, dt)
        values, _ = torch.sort(x)
        top, _ = torch.topk(x, 10)
        return torch.cat([values, top])

    def index_scatter(dev, ref):
        dt = ref or torch.float32
        x = seeded((32, 8), seed=12).to(dev, dt)
        idx = torch.arange(31, -1, -1, device=dev)
        picked = x[idx]
        out = torch.zeros(32, 8, device=dev, dtype=dt)
        out.scatter_add_(0, idx.unsqueeze(1).expand(32, 8), picked)
        return out

    def embedding(dev, ref):
        dt = ref or torch.float32
        table = seeded((100, 16), seed=13).to(dev, dt)
        ids = torch.tensor([[1, 5, 99], [0, 42, 7]], device=dev)
        return torch.nn.functional.embedding(ids, table)

    def random(dev, ref):
        # same seed twice on the device must give the same numbers; statistics must be sane
        def draw():
            g = torch.Generator(device=dev).manual_seed(1234)
            return torch.rand(4096, generator=g, device=dev)

        a, b = draw(), draw()
        if not torch.equal(a, b):
            raise AssertionError("same seed gave different numbers")
        mean = float(a.double().mean())
        if not 0.45 < mean < 0.55:
            raise AssertionError(f"uniform mean {mean:.3f} is implausible")
        return None

    return [
        ("matmul.fp32", "matmul", matmul(torch.float32), "float32"),
        ("matmul.fp16", "matmul", matmul(torch.float16), "float16"),
        ("matmul.bf16", "matmul", matmul(torch.bfloat16), "bfloat16"),
        ("blas.gemv", "blas", gemv, "float32"),
        ("conv2d", "nn", conv2d, "float32"),
        ("sdpa", "nn", sdpa, "float32"),
        ("layer_norm", "nn", layer_norm, "float32"),
        ("softmax", "nn", softmax, "float32"),
        ("fft", "fft", fft, "complex64"),
        ("sort_topk", "sort", sort_topk, "float32"),
        ("index_scatter", "indexing", index_scatter, "float32"),
        ("embedding", "nn", embedding, "float32"),
        ("random.seeded", "random", random, "float32"),
    ]


def _compare(got, want):
    """(ok, max_abs, max_rel, why) of the device result against the CPU reference (output_compare.py:
    torch's rule and per-dtype tolerances, across backends)."""
    verdict = _beside("output_compare").compare_tensors(got, want)
    return verdict.agree, verdict.max_abs_error, verdict.max_rel_error, verdict.detail


def run(device, skip=()):
    import torch

    ops = _ops(torch)
    info = side.open_device(torch, device)
    if not info["available"]:
        _emit("info", ops=[], **info)
        return
    _emit("info", ops=[op[0] for op in ops], areas={op[0]: op[1] for op in ops}, **info)
    ref = torch.float64
    for op_id, area, fn, dtype_name in ops:
        if op_id in skip:
            continue
        _emit("begin", id=op_id)
        started = time.perf_counter()
        entry = {"id": op_id, "area": area, "dtype": dtype_name}
        try:
            got = fn(device, None)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            if got is None:
                entry.update(status="pass")
            else:
                want = fn("cpu", ref)
                ok, max_abs, max_rel, why = _compare(got, want)
                entry.update(
                    status="pass" if ok else "mismatch", max_abs_err=max_abs, max_rel_err=max_rel, detail=why
                )
        except Exception as exc:
            tb = traceback.format_exception_only(type(exc), exc)
            entry.update(status="error", detail="".join(tb).strip()[:2000])
        entry["duration_s"] = time.perf_counter() - started
        _emit("op", **entry)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--done-file", default="", help="ids already reported, one per line")
    args = parser.parse_args(argv)
    try:
        run(args.device, skip=side.done_ids(args.done_file))
    except ImportError as exc:
        side.emit_no_torch(args.device, exc)
    _emit("end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
