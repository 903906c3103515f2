"""Torch-op probe from PyTorch's own OpInfo database, run INSIDE the target interpreter.

    python torch_opinfo.py --device cuda [--dtypes float32,float16] [--ops 'add,nn.functional.*']
                           [--samples 1] [--done-file PATH]

Depends on nothing but torch and the standard library (it is executed by the workload's own
Python); the database itself (``torch.testing._internal.common_methods_invocations.op_db``) needs
numpy and expecttest in that interpreter. For every op and dtype, the op's first sample inputs
run on the device and on the CPU (the same inputs, same dtype, as torch's own
``TestCommon.test_compare_cpu`` does); ``--device cpu`` compares CPU results with the float64 CPU
result instead. Compared by ``output_compare.py`` beside this script (torch's rule; per dtype, torch's
``assert_close`` defaults raised to its ``test_compare_cpu`` 1e-3), raised to the op's own
``toleranceOverride`` where OpInfo gives one. Ops torch itself skips or expects to fail in
``test_compare_cpu`` (random, uninitialised outputs ...) are ``skipped`` with torch's reason; a dtype
the op does not declare for the device is ``unsupported``.

Events are JSON lines after MARKER, flushed at once, so that the caller knows which (op, dtype)
was running if the process dies: ``{"event": "info", ...}``, ``{"event": "begin", "id": ...}``,
``{"event": "op", ...}``, ``{"event": "end"}``. Ids already listed in ``--done-file`` are not run
again (the caller restarts the probe after a crash or hang).
"""

import argparse
import fnmatch
import importlib.util
import os
import sys
import time
import traceback
import warnings


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
COMPARE_TEST = ("TestCommon", "test_compare_cpu")


def family_of(op):
    """``nn.functional``, ``linalg``, ``special``, ``fft`` ... from the name; else by OpInfo kind."""
    if "." in op.name:
        return op.name.rsplit(".", 1)[0]
    kind = type(op).__name__
    return {
        "UnaryUfuncInfo": "unary",
        "BinaryUfuncInfo": "binary",
        "ReductionOpInfo": "reduction",
        "SpectralFuncInfo": "fft",
        "ShapeFuncInfo": "shape",
    }.get(kind, "torch")


def op_id(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def _decorations(op, device_type, dtype):
    """(skip reason or None, atol, rtol) from the op's DecorateInfo entries for this dtype."""
    import unittest  # noqa: F401 - the decorators below come from it

    skip, atol, rtol = None, 0.0, 0.0
    for info in list(getattr(op, "skips", ())) + list(getattr(op, "decorators", ())):
        decorators = getattr(info, "decorators", None)
        if decorators is None:
            continue
        try:
            active = info.is_active(COMPARE_TEST[0], COMPARE_TEST[1], device_type, dtype, {})
            any_test = info.is_active(info.cls_name, info.test_name, device_type, dtype, {})
        except Exception:  # noqa: S112 - an active_if that needs parameters we do not have
            continue
        for dec in decorators:
            overrides = getattr(dec, "d", None)
            if isinstance(overrides, dict) and any_test and dtype in overrides:
                value = overrides[dtype]  # toleranceOverride: tol(atol, rtol); precisionOverride: atol
                atol = max(atol, float(getattr(value, "atol", value)))
                rtol = max(rtol, float(getattr(value, "rtol", 0.0)))
            elif active and info.cls_name and skip is None:
                name = getattr(dec, "__qualname__", "")
                if name.startswith("skip"):
                    cells = [c.cell_contents for c in (getattr(dec, "__closure__", None) or ())]
                    reason = next((c for c in cells if isinstance(c, str)), "skipped")
                    skip = f"torch skips {'.'.join(COMPARE_TEST)}: {reason}"
                elif name == "expectedFailure":
                    skip = f"torch expects {'.'.join(COMPARE_TEST)} to fail here"
    return skip, atol, rtol


def compare(got, want, at_least=(0.0, 0.0)):
    """(status, max_abs, max_rel, why) for any output structure (tensors, tuples, scalars), each leaf
    by output_compare.py (torch's rule and per-dtype tolerances, across backends, raised to
    ``at_least`` = the op's own (rtol, atol))."""
    import torch
    from torch.utils import _pytree as pytree

    oc = _beside("output_compare")
    got_leaves, _ = pytree.tree_flatten(got)
    want_leaves, _ = pytree.tree_flatten(want)
    if len(got_leaves) != len(want_leaves):
        return "mismatch", None, None, f"{len(got_leaves)} outputs, the reference has {len(want_leaves)}"
    max_abs = max_rel = 0.0
    for index, (g, w) in enumerate(zip(got_leaves, want_leaves)):  # noqa: B905 - lengths checked
        if isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor):
            verdict = oc.compare_tensors(g, w, at_least=at_least)
        elif oc.scalar_dtype(g) and oc.scalar_dtype(w):
            verdict = oc.compare_values([g], [w], got_dtype=oc.scalar_dtype(g), want_dtype=oc.scalar_dtype(w),
                                        at_least=at_least)
        elif g == w:
            continue
        else:
            return "mismatch", None, None, f"output {index}: {g!r} != {w!r}"
        if not verdict.agree:
            why = f"output {index}: {verdict.detail}"
            return "mismatch", verdict.max_abs_error, verdict.max_rel_error, why
        max_abs = max(max_abs, verdict.max_abs_error or 0.0)
        max_rel = max(max_rel, verdict.max_rel_error or 0.0)
    return "pass", max_abs, max_rel, ""


def _samples(op, dtype, count):
    out = []
    for sample in op.sample_inputs("cpu", dtype, requires_grad=False):
        out.append(sample)
        if len(out) >= count:
            break
    return out


def _run_one(torch, op, dtype, device, samples, atol, rtol):
    """Run ``op``'s samples on ``device`` and on the CPU reference; the worst comparison wins."""
    ref_dtype = torch.float64 if device == "cpu" else dtype
    if device != "cpu" and dtype not in op.supported_dtypes("cpu"):
        ref_dtype = torch.float32
    worst = ("pass", 0.0, 0.0, "")
    for sample in samples:
        on_device = sample.transform(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t)

        def to_ref(t):
            if isinstance(t, torch.Tensor) and t.is_floating_point():
                return t.to("cpu", ref_dtype)
            return t.to("cpu") if isinstance(t, torch.Tensor) else t

        reference = sample.transform(to_ref)
        got = op(on_device.input, *on_device.args, **on_device.kwargs)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        want = op(reference.input, *reference.args, **reference.kwargs)
        got = on_device.output_process_fn_grad(got)
        want = reference.output_process_fn_grad(want)
        result = compare(got, want, (rtol, atol))
        if result[0] != "pass":
            return result
        worst = ("pass", max(worst[1], result[1] or 0.0), max(worst[2], result[2] or 0.0), "")
    return worst


def selected(ops, patterns):
    if not patterns:
        return list(ops)
    return [op for op in ops if any(fnmatch.fnmatchcase(op_id(op), p) for p in patterns)]


def run(device, dtype_names, patterns, samples, done):
    import torch

    warnings.simplefilter("ignore")
    info = side.open_device(torch, device)
    if not info["available"]:
        _emit("info", ops=[], **info)
        return
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except ImportError as exc:
        info.update(available=False, reason=f"cannot load torch's OpInfo database: {exc}")
        _emit("info", ops=[], **info)
        return
    device_type = device.split(":")[0]
    dtypes = [getattr(torch, name) for name in dtype_names]
    ops = selected(op_db, patterns)
    planned = [f"{op_id(op)}@{name}" for op in ops for name in dtype_names]
    families = {op_id(op): family_of(op) for op in ops}
    _emit("info", ops=planned, areas={p: families[p.rsplit("@", 1)[0]] for p in planned}, **info)
    for op in ops:
        try:
            supported = op.supported_dtypes(device_type)
        except Exception:
            supported = set()
        for name, dtype in zip(dtype_names, dtypes, strict=True):
            case_id = f"{op_id(op)}@{name}"
            if case_id in done:
                continue
            _emit("begin", id=case_id)
            entry = {"id": case_id, "op": op_id(op), "area": family_of(op), "dtype": name}
            started = time.perf_counter()
            try:
                skip, atol, rtol = _decorations(op, device_type, dtype)
                todo = _samples(op, dtype, samples) if dtype in supported and not skip else []
                if dtype not in supported:
                    entry.update(
                        status="unsupported", detail=f"{op_id(op)} declares no {name} on {device_type}"
                    )
                elif skip:
                    entry.update(status="skipped", detail=skip)
                elif not todo:
                    entry.update(status="skipped", detail="OpInfo has no sample inputs for this dtype")
                else:
                    status, max_abs, max_rel, why = _run_one(torch, op, dtype, device, todo, atol, rtol)
                    entry.update(status=status, max_abs_err=max_abs, max_rel_err=max_rel, detail=why)
            except Exception as exc:
                text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                entry.update(status="error", detail=text[:1000])
            entry["duration_s"] = time.perf_counter() - started
            _emit("op", **entry)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtypes", default="float32,float16,bfloat16")
    parser.add_argument("--ops", default="", help="comma-separated fnmatch patterns of op ids")
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--done-file", default="", help="ids already reported, one per line")
    args = parser.parse_args(argv)
    patterns = [p.strip() for p in args.ops.split(",") if p.strip()]
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    try:
        run(args.device, dtypes, patterns, max(args.samples, 1), side.done_ids(args.done_file))
    except ImportError as exc:
        side.emit_no_torch(args.device, exc)
    _emit("end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
