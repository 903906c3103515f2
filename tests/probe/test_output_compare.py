"""One output comparator (zluda_runner/probe/output_compare.py): the quick torch probe, the OpInfo probe
and ``ab`` give the same verdict on the same inputs, and it is torch's own verdict
(``torch.testing.assert_close(equal_nan=True, check_dtype=False)``) at the tolerances it reports."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require
from zluda_runner.abtest.compare import compare_output
from zluda_runner.abtest.model import Output
from zluda_runner.probe import output_compare as oc

PROBE = Path(oc.__file__).resolve().parent
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64")
CASES = {  # case -> (expected verdict, floating dtypes only)
    "equal": ("agree", False),
    "within": ("agree", False),
    "outside": ("differ", False),
    "nan_same_place": ("agree", True),
    "nan_other_place": ("differ", True),
    "inf_same": ("agree", True),
    "inf_vs_number": ("differ", True),
    "inf_opposite": ("differ", True),
    "shape": ("differ", False),
}


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        require(False, "torch not installed (pip install torch==2.13.0)")
    return torch


def _pair(torch: Any, dtype_name: str, case: str) -> tuple[Any, Any]:
    dtype = getattr(torch, dtype_name)
    want = [1.0, 2.0, 4.0, -8.0, 0.5, 3.0]
    got = list(want)
    rtol, atol = oc.tolerance(dtype_name)
    if case == "within":
        got[1] = 2.0 + 0.4 * (atol + rtol * 2.0)
    elif case == "outside":
        got[1] = 2.0 + max(4 * (atol + rtol * 2.0), 1.0 if dtype_name == "int64" else 0.0)
    elif case == "nan_same_place":
        got[2] = want[2] = float("nan")
    elif case == "nan_other_place":
        got[2], want[3] = float("nan"), float("nan")
    elif case == "inf_same":
        got[0] = want[0] = float("inf")
    elif case == "inf_vs_number":
        got[0] = float("inf")
    elif case == "inf_opposite":
        got[0], want[0] = float("-inf"), float("inf")
    elif case == "shape":
        got = got[:4]
    return torch.tensor(got).to(dtype), torch.tensor(want).to(dtype)


def _torch_verdict(torch: Any, got: Any, want: Any) -> str:
    rtol, atol = oc.tolerance(oc.dtype_name(got), oc.dtype_name(want))
    try:
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True, check_dtype=False)
    except AssertionError:
        return "differ"
    return "agree"


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_the_three_paths_and_torch_give_one_verdict(dtype_name: str) -> None:
    torch = _torch()
    from zluda_runner.probe.torch_opinfo import compare as opinfo_compare
    from zluda_runner.probe.torch_ops import _compare as quick_compare

    table = {}
    for case, (expected, floating_only) in CASES.items():
        if floating_only and dtype_name == "int64":
            continue
        got, want = _pair(torch, dtype_name, case)
        quick = "agree" if quick_compare(got, want)[0] else "differ"
        opinfo = "agree" if opinfo_compare(got, want)[0] == "pass" else "differ"
        ab = compare_output(Output("x", dtype_name, list(got.shape), got.double().tolist()),
                            Output("x", dtype_name, list(want.shape), want.double().tolist()))
        ab_verdict = "agree" if ab.status == "agree" else "differ"
        table[case] = (quick, opinfo, ab_verdict, _torch_verdict(torch, got, want), expected)
    wrong = {case: row for case, row in table.items() if len(set(row)) != 1}
    assert not wrong, f"(quick probe, OpInfo probe, ab, torch, expected) for {dtype_name}: {wrong}"


def test_mixed_dtypes_take_the_looser_tolerance_and_report_it() -> None:
    torch = _torch()
    from zluda_runner.probe.torch_ops import _compare as quick_compare

    want = torch.tensor([2.0], dtype=torch.float64)
    got = torch.tensor([2.02], dtype=torch.bfloat16)  # 2.015625 in bfloat16: inside rtol 1.6e-2
    assert quick_compare(got, want)[0] and _torch_verdict(torch, got, want) == "agree"
    assert not quick_compare(got.float(), want)[0]  # float32 against float64: 1e-3
    assert oc.tolerance("bfloat16", "float64") == (1.6e-2, 1e-3)
    assert oc.tolerance("float64", across_backends=False) == (1e-7, 1e-7)  # assert_close's own
    assert oc.tolerance("int64") == (0.0, 0.0)  # integers stay exact across backends


def test_the_fallback_table_is_torchs_own_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = _torch()
    from torch.testing._comparison import default_tolerances

    for name, pair in oc.FALLBACK_TOLERANCES.items():
        assert default_tolerances(getattr(torch, name)) == pytest.approx(pair), name
    assert default_tolerances(torch.int64) == (0.0, 0.0) and "int64" not in oc.FALLBACK_TOLERANCES
    # torch loaded: read from it; torch absent (ab comparing saved outputs): the table
    oc.default_tolerance.cache_clear()
    monkeypatch.setattr(oc, "FALLBACK_TOLERANCES", {"float32": (9.0, 9.0)})
    assert oc.default_tolerance("float32") == (1.3e-6, 1e-5)
    oc.default_tolerance.cache_clear()
    monkeypatch.setitem(sys.modules, "torch", None)
    assert oc.default_tolerance("float32") == (9.0, 9.0)
    oc.default_tolerance.cache_clear()


def test_values_without_torch_follow_the_same_rule() -> None:
    nan, inf = float("nan"), float("inf")
    verdict = oc.compare_values([1.0, nan, inf, 2.5], [1.0005, nan, inf, 2.5], got_dtype="float32",
                                want_dtype="float32")
    assert verdict.agree and verdict.max_abs_error == pytest.approx(5e-4)
    bad = oc.compare_values([nan, 1.0, -inf], [0.0, 1.0, inf], got_dtype="float32", want_dtype="float32")
    assert (bad.status, bad.mismatched, bad.elements) == ("differ", 2, 3)
    assert (bad.non_finite, bad.index) == (2, 0)
    zero = oc.compare_values([0.5], [0.0], got_dtype="float32", want_dtype="float32")
    assert zero.max_rel_error is None and zero.max_abs_error == 0.5
    short = oc.compare_values([1, 2], [1, 2, 3], got_dtype="int64", want_dtype="int64")
    assert short.status == "shape_mismatch"
    turned = oc.compare_values([1.0, 2.0], [1.0, 2.0], got_dtype="float32", want_dtype="float32",
                               got_shape=[2, 1], want_shape=[1, 2])
    assert turned.status == "shape_mismatch"
    complex_close = oc.compare_values([1 + 1j], [1 + 1.0005j], got_dtype="complex64", want_dtype="complex128")
    assert complex_close.agree


def test_a_probe_script_loads_the_comparator_beside_it_without_zluda_runner(tmp_path: Path) -> None:
    """In the target interpreter only the script's folder is there: ``-I`` (no script folder on
    sys.path, no PYTHONPATH) and a copy of the three files outside the package."""
    _torch()
    for name in ("torch_ops.py", "output_compare.py", "target_side.py"):
        shutil.copy(PROBE / name, tmp_path / name)
    code = ("import sys, runpy; sys.modules['zluda_runner'] = None; "
            "sys.argv = [sys.argv[1], '--device', 'cpu']; runpy.run_path(sys.argv[0], run_name='__main__')")
    proc = subprocess.run([sys.executable, "-I", "-c", code, str(tmp_path / "torch_ops.py")],
                          capture_output=True, text=True, timeout=300, check=False)
    events = [json.loads(line.split(" ", 1)[1]) for line in proc.stdout.splitlines()
              if line.startswith("ZLUDA_RUNNER_TORCH_PROBE ")]
    ops = {e["id"]: e["status"] for e in events if e["event"] == "op"}
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(ops) == 13 and set(ops.values()) == {"pass"}, ops


def test_what_the_scripts_load_stands_alone() -> None:
    """output_compare.py and target_side.py run in the target interpreter too: the standard library
    and torch only, and no syntax newer than Python 3.9 needs at run time (no ``zip(strict=)``)."""
    import ast

    for name in ("output_compare.py", "target_side.py"):
        tree = ast.parse((PROBE / name).read_text(encoding="utf-8"))
        roots = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
        roots |= {(node.module or "").split(".")[0] for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom)}
        assert roots - set(sys.stdlib_module_names) <= {"torch"}, (name, roots)
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                 and getattr(node.func, "id", "") == "zip" and any(k.arg == "strict" for k in node.keywords)]
        assert not calls and not any(isinstance(node, ast.Match) for node in ast.walk(tree)), name
