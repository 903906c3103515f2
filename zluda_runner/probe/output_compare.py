"""The one output comparator: the quick torch probe, the OpInfo probe and ``ab`` judge outputs here.

Standard library only (torch optional): the two probe scripts run inside the TARGET interpreter, where
``zluda_runner`` may be missing or another version, so they load this file by path from beside
themselves (``_comparator()`` in each); ``zluda_runner.abtest`` imports it as a module.

The rule is torch's own (``torch.testing.assert_close``, ``NumberPair.compare`` in
torch/testing/_comparison.py): a value ``got`` is close to the reference ``want`` when they are
equal (so ``inf == inf`` of the same sign), or when both are NaN, or when ``|got - want|`` is finite and
at most ``atol + rtol * |want|``. Infinity against a number or against the other infinity is a
mismatch. NaN equals NaN *at the same position* (``equal_nan=True``, the default of torch's own
``TestCase.assertEqual`` that OpInfo tests use): an op whose exact result is NaN (``log(-1)``, ``0/0``)
must give NaN on the device too, and a NaN where the reference has a number is a mismatch.

Tolerances (rtol, atol) per dtype are torch's ``assert_close`` defaults, read from the running torch
where one is loaded (:func:`default_tolerance`), else the table of its documentation
(:data:`FALLBACK_TOLERANCES`; tests/probe/test_output_compare.py checks it against torch). Mixed
dtypes take the looser of the two (as ``assert_close(check_dtype=False)``). Every comparison
zluda-runner makes is ACROSS backends (a device against the CPU, ZLUDA against native CUDA), where
libraries sum in other orders: floating dtypes are then raised to torch's own cross-device tolerance,
``atol=rtol=1e-3`` of ``TestCommon.test_compare_cpu`` (pytorch/pytorch test/test_ops.py)
(:data:`ACROSS_BACKENDS`). Integers and bool stay exact. Explicit ``rtol``/``atol`` replace the
defaults; ``at_least`` raises them (an OpInfo op's own ``toleranceOverride``).

A mismatch says what differs (:attr:`Closeness.detail`): the largest difference, then the element it
is at with both values (``the largest difference: 0.5, 3.5 where the reference has 3 at index 2``), or
the first element where a NaN or an infinity stands against something else (``inf where the reference
has 1.5 at index 3``); ``max_abs_error`` is then torch's own figure for it, ``inf`` (or ``nan`` where a NaN
is on one side only), never the 0 of the pairs that were finite.
"""

from __future__ import annotations

import cmath
import functools
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import torch

Status = Literal["agree", "differ", "shape_mismatch"]

# torch.testing.assert_close's documented defaults, (rtol, atol) (torch 2.13 docstring table; quantized
# dtypes use float32's); any other dtype (integers, bool, float8) is exact
FALLBACK_TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
    **dict.fromkeys(("quint8", "quint2x4", "quint4x2", "qint8", "qint32"), (1.3e-6, 1e-5)),
}
ACROSS_BACKENDS = (1e-3, 1e-3)  # (rtol, atol): torch's test_compare_cpu, a device against the CPU


@dataclass(frozen=True)
class Closeness:
    """The verdict on one output. ``max_abs_error``: the largest ``|got - want|``, as torch's
    ``assert_close`` reports it: ``inf`` where an infinity differs (from a number, from the other
    infinity), ``nan`` where a NaN stands against a number. ``max_rel_error``: the largest
    ``|got - want| / |want|`` over the pairs that differ by a finite amount, None where it is no finite
    number (a reference of 0, an infinity or NaN on one side). ``non_finite``: how many mismatches are a
    NaN or an infinity against something else; ``index``: the flat index of the element ``detail`` names
    (the first of those, else the largest difference; None: no mismatch). ``detail`` says what differs."""

    status: Status
    rtol: float
    atol: float
    elements: int = 0
    mismatched: int = 0
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    detail: str = ""
    non_finite: int = 0
    index: int | None = None

    @property
    def agree(self) -> bool:
        return self.status == "agree"


def is_floating(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat", "complex", "q"))


def _from_torch(dtype: str) -> tuple[float, float] | None:
    """What the loaded torch's assert_close would use (the function it calls), or None. A torch not
    already imported is not imported for this: ``ab`` compares saved outputs without it."""
    torch_module = sys.modules.get("torch")
    if torch_module is None:
        return None
    try:
        from torch.testing._comparison import default_tolerances

        rtol, atol = default_tolerances(getattr(torch_module, dtype))
        return float(rtol), float(atol)
    except Exception:  # a torch without this function or dtype: the documented table
        return None


@functools.lru_cache(maxsize=64)
def default_tolerance(dtype: str) -> tuple[float, float]:
    """torch.testing.assert_close's (rtol, atol) for a dtype name (``float16``); (0, 0) for exact."""
    found = _from_torch(dtype)
    return found if found is not None else FALLBACK_TOLERANCES.get(dtype, (0.0, 0.0))


def tolerance(*dtypes: str, rtol: float | None = None, atol: float | None = None,
              at_least: tuple[float, float] = (0.0, 0.0),
              across_backends: bool = True) -> tuple[float, float]:
    """(rtol, atol) for comparing values of ``dtypes`` (the loosest of them), see the module doc."""
    r = max((default_tolerance(d)[0] for d in dtypes), default=0.0)
    a = max((default_tolerance(d)[1] for d in dtypes), default=0.0)
    if across_backends and any(is_floating(d) for d in dtypes):
        r, a = max(r, ACROSS_BACKENDS[0]), max(a, ACROSS_BACKENDS[1])
    r, a = max(r, at_least[0]), max(a, at_least[1])
    return (r if rtol is None else rtol), (a if atol is None else atol)


def compare_values(got: Sequence[complex], want: Sequence[complex], *, got_dtype: str, want_dtype: str,
                   got_shape: Sequence[int] | None = None, want_shape: Sequence[int] | None = None,
                   rtol: float | None = None, atol: float | None = None,
                   at_least: tuple[float, float] = (0.0, 0.0), across_backends: bool = True) -> Closeness:
    """Compare ``got`` (flattened) with the reference ``want`` element by element."""
    r, a = tolerance(got_dtype, want_dtype, rtol=rtol, atol=atol, at_least=at_least,
                     across_backends=across_backends)
    shape_g = tuple(got_shape) if got_shape is not None else (len(got),)
    shape_w = tuple(want_shape) if want_shape is not None else (len(want),)
    if shape_g != shape_w or len(got) != len(want):
        return Closeness("shape_mismatch", r, a, detail=f"shape {shape_g} != {shape_w}")
    mismatched = non_finite = 0
    max_abs = max_rel = 0.0
    unbounded: float | None = None  # inf, or nan: what torch reports for a pair that differs by no number
    first_odd = worst = -1  # the first NaN/infinity mismatch, the largest finite one outside tolerance
    worst_diff = -1.0
    for index, (x, y) in enumerate(zip(got, want)):  # noqa: B905 - lengths checked; strict= is 3.10+
        if x == y:
            continue
        if cmath.isnan(x) and cmath.isnan(y):
            continue
        diff = abs(x - y)
        if not math.isfinite(diff):
            mismatched += 1
            non_finite += 1
            first_odd = index if first_odd < 0 else first_odd
            nan_here = cmath.isnan(x) or cmath.isnan(y) or math.isnan(diff)
            nan_before = unbounded is not None and math.isnan(unbounded)
            unbounded = math.nan if nan_here or nan_before else math.inf
            continue
        max_abs = max(max_abs, diff)
        max_rel = max(max_rel, diff / abs(y) if y else math.inf)
        if diff > a + r * abs(y):
            mismatched += 1
            if diff > worst_diff:
                worst, worst_diff = index, diff
    detail = ""
    if mismatched:
        detail = f"{mismatched}/{len(got)} elements outside rtol {r:g} / atol {a:g}"
        if non_finite:
            detail += (f" ({non_finite} NaN or infinite where the other is not; the first: "
                       f"{_pair_text(got, want, first_odd, shape_g)})")
        else:
            detail += (f" (the largest difference: {_number_text(worst_diff)}, "
                       f"{_pair_text(got, want, worst, shape_g)})")
    named = (first_odd if non_finite else worst) if mismatched else None
    if unbounded is not None:
        return Closeness("differ", r, a, elements=len(got), mismatched=mismatched, max_abs_error=unbounded,
                         max_rel_error=None, detail=detail, non_finite=non_finite, index=named)
    return Closeness("agree" if not mismatched else "differ", r, a, elements=len(got), mismatched=mismatched,
                     max_abs_error=max_abs, max_rel_error=max_rel if math.isfinite(max_rel) else None,
                     detail=detail, non_finite=non_finite, index=named)


def _pair_text(got: Sequence[complex], want: Sequence[complex], index: int, shape: Sequence[int]) -> str:
    """``inf where the reference has 1.5 at index 3`` (``index (1, 2)`` in a tensor of more dimensions)."""
    return f"{_number_text(got[index])} where the reference has {_number_text(want[index])} at index " \
           f"{_index_text(index, shape)}"


def _number_text(value: complex) -> str:
    if isinstance(value, int):  # bool too
        return str(value)
    if isinstance(value, complex):
        return f"({value.real:.6g}{value.imag:+.6g}j)"
    return f"{value:.6g}"


def _index_text(flat: int, shape: Sequence[int]) -> str:
    """The flat (row-major) index as the tensor's own index: ``3``, ``(1, 2)``."""
    if len(shape) <= 1 or any(n <= 0 for n in shape):
        return str(flat)
    parts = []
    for size in reversed(shape):
        flat, at = divmod(flat, size)
        parts.append(at)
    return "(" + ", ".join(str(p) for p in reversed(parts)) + ")"


def dtype_name(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).rsplit(".", 1)[-1]


def flat_values(tensor: torch.Tensor) -> list[complex]:
    """A tensor's values as Python numbers, row-major (any device, layout, conj/neg view)."""
    import torch

    t = tensor.detach().to("cpu")
    if t.is_quantized:
        t = t.dequantize()
    if t.layout != torch.strided:
        t = t.to_dense()
    t = t.resolve_conj().resolve_neg()
    if t.dtype == torch.complex32:  # no Python numbers for it
        t = t.to(torch.complex64)
    values: list[complex] = t.reshape(-1).tolist()
    return values


def compare_tensors(got: torch.Tensor, want: torch.Tensor, *, rtol: float | None = None,
                    atol: float | None = None, at_least: tuple[float, float] = (0.0, 0.0),
                    across_backends: bool = True) -> Closeness:
    """:func:`compare_values` for two torch tensors (``want`` is the reference)."""
    if tuple(got.shape) != tuple(want.shape):
        r, a = tolerance(dtype_name(got), dtype_name(want), rtol=rtol, atol=atol, at_least=at_least,
                         across_backends=across_backends)
        return Closeness("shape_mismatch", r, a, detail=f"shape {tuple(got.shape)} != {tuple(want.shape)}")
    return compare_values(flat_values(got), flat_values(want), got_dtype=dtype_name(got),
                          want_dtype=dtype_name(want), got_shape=tuple(got.shape),
                          want_shape=tuple(want.shape), rtol=rtol, atol=atol, at_least=at_least,
                          across_backends=across_backends)


def scalar_dtype(value: object) -> str | None:
    """The dtype a Python scalar stands for (as assert_close sees it), None for a non-number."""
    if isinstance(value, bool):
        return "bool"
    return {int: "int64", float: "float64", complex: "complex128"}.get(type(value))
