"""Torch-level probe (CPU mode here) and the probe / trace-report commands."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from click.testing import CliRunner

from tests.conftest import require
from zluda_runner.cli import main_group
from zluda_runner.probe import output_compare as oc
from zluda_runner.probe.torch_probe import run_torch_probe


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def test_torch_ops_on_cpu_match_float64() -> None:
    require(_has_torch(), "torch not installed (pip install torch==2.13.0)")
    report = run_torch_probe(sys.executable, os.environ, device="cpu", timeout=300)
    assert report.load is not None and report.load.status == "pass"
    ids = {c.id for c in report.cases}
    assert {"matmul.fp16", "matmul.bf16", "sdpa", "fft", "random.seeded"} <= ids
    gemv = report.case("blas.gemv")  # matrix x vector, float32: cuBLAS gemv on a device (a v5-v7 caveat)
    assert gemv is not None and (gemv.area, gemv.dtype, gemv.status) == ("blas", "float32", "pass")
    assert report.summary == {"pass": len(report.cases)}
    assert all(c.max_abs_err is not None for c in report.cases if c.id != "random.seeded")


def test_torch_without_cuda_says_unavailable() -> None:
    require(_has_torch(), "torch not installed (pip install torch==2.13.0)")
    import torch

    require(not torch.cuda.is_available(), "this torch has a CUDA device")
    report = run_torch_probe(sys.executable, os.environ, device="cuda", timeout=300)
    assert report.load is not None and report.load.status == "unavailable"
    assert report.cases == () and sys.executable in report.load.detail  # the interpreter whose torch said so


def test_probe_command_json_and_html(standin: Path, tmp_path: Path) -> None:
    page = tmp_path / "probe.html"
    result = CliRunner().invoke(
        main_group,
        [
            "probe",
            "--libcuda",
            str(standin),
            "--case",
            "init.cuInit",
            "--case",
            "device.uuid",
            "--json",
            "--html",
            str(page),
        ],
    )
    assert result.exit_code == 3, result.output  # a case failed
    data = json.loads(result.stdout)
    assert data["schema"] == 1 and [c["status"] for c in data["cases"]] == ["pass", "fail"]
    clean = CliRunner().invoke(main_group, ["probe", "--libcuda", str(standin), "--case", "init.cuInit"])
    assert clean.exit_code == 0, clean.output
    assert "<table" in page.read_text()
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    argv = ["--json", "probe", "--libcuda", str(standin), "--case", "init.cuInit",
            "--html", str(blocked / "x.html")]
    bad = CliRunner().invoke(main_group, argv)
    error = json.loads(bad.stdout)
    assert (bad.exit_code, error["kind"]) == (1, "output-file") and str(blocked) in error["error"]
    assert error["hint"]


def test_probe_json_lists_150_functions_and_exits_3(standin: Path) -> None:
    result = CliRunner().invoke(main_group, ["probe", "--libcuda", str(standin), "--json", "--timeout", "2"])
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    called = {call["function"] for case in data["cases"] for call in case["calls"]}
    assert len(called) >= 150, len(called)


def test_torch_op_probe_command_on_cpu() -> None:
    import importlib.util

    for module in ("torch", "numpy", "expecttest"):
        require(importlib.util.find_spec(module) is not None, f"{module} not installed")
    args = ["probe", "--torch", "--device", "cpu", "--ops", "add,mul", "--dtypes", "float32", "--json"]
    result = CliRunner().invoke(main_group, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [(c["id"], c["status"], c["area"]) for c in data["cases"]] == [
        ("add@float32", "pass", "binary"),
        ("mul@float32", "pass", "binary"),
    ]


def test_probe_command_without_libcuda(tmp_path: Path, monkeypatch) -> None:
    # No --libcuda: the driver comes from --zluda-dir, which here holds no ZLUDA at all.
    result = CliRunner().invoke(main_group, ["--json", "--zluda-dir", str(tmp_path), "probe"])
    error = json.loads(result.stdout)
    assert result.exit_code == 1 and str(tmp_path) in error["error"] and error["hint"], error
    # Nor --zluda-dir: the manifest's release for this host is fetched; a mirror without it fails
    # with the URL named, and nothing is left in the cache.
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    cache = tmp_path / "cache"
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", mirror.as_uri())
    result = CliRunner().invoke(main_group, ["--cache-dir", str(cache), "probe", "--trust-on-first-use"])
    assert result.exit_code == 1, result.output
    assert "zluda-linux-" in result.output and "hint:" in result.output
    leftovers = [p for p in cache.rglob("*") if p.is_file() and p.suffix not in (".lock", ".json")]
    assert leftovers == [] and not any(cache.rglob("*.complete.json"))


def test_trace_report_command(tmp_path: Path) -> None:
    (tmp_path / "p_1").mkdir()
    (tmp_path / "p_1" / "log.txt").write_text("cuInit(flags: 0) -> CUDA_SUCCESS\ncuCtxSynchronize() -> 801\n")
    result = CliRunner().invoke(main_group, ["trace-report", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {c["function"] for c in data["calls"]} == {"cuInit", "cuCtxSynchronize"}
    saved = tmp_path / "trace.json"
    saved.write_text(result.stdout)
    md = CliRunner().invoke(main_group, ["trace-report", str(saved), "--html", str(tmp_path / "t.html")])
    assert md.exit_code == 0 and "cuCtxSynchronize" in md.stdout
    log = tmp_path / "p_1" / "log.txt"
    bad = CliRunner().invoke(main_group, ["--json", "trace-report", str(log)])
    error = json.loads(bad.stdout)
    assert (bad.exit_code, error["kind"]) == (1, "trace") and str(log) in error["error"]


# A stand-in "interpreter": speaks torch_ops.py's event protocol without torch. Ops a, b, c, d:
# b kills the process with SIGSEGV, d hangs in "--hang" mode; the rest report a fixed status.
FAKE_TORCH = """\
import json, os, signal, sys, time
M = "ZLUDA_RUNNER_TORCH_PROBE "
skip = open(sys.argv[sys.argv.index("--done-file") + 1]).read().split()
hang = "--hang" in open(os.environ["FAKE_TORCH_MODE"]).read()
def emit(**e):
    print(M + json.dumps(e), flush=True)
emit(event="info", torch="0.fake", device="cuda", available=True, ops=["a", "b", "c", "d"],
     areas={"a": "x", "b": "y", "c": "z", "d": "w"})
for op in ["a", "b", "c", "d"]:
    if op in skip:
        continue
    emit(event="begin", id=op)
    if op == "b":
        os.kill(os.getpid(), signal.SIGSEGV)
    if op == "d" and hang:
        time.sleep(60)
    status = {"a": "pass", "c": "mismatch", "d": "pass"}[op]
    emit(event="op", id=op, area="z", dtype="float16", status=status, max_abs_err=0.5, max_rel_err=0.25)
emit(event="end")
"""


def _fake_python(tmp_path: Path, mode: str) -> tuple[str, dict[str, str]]:
    script = tmp_path / "fake-python"
    script.write_text(f"#!{sys.executable}\n" + "import runpy, sys\nrunpy.run_path(sys.argv[0] + '.py')\n")
    (tmp_path / "fake-python.py").write_text(FAKE_TORCH)
    script.chmod(0o755)
    (tmp_path / "mode").write_text(mode)
    return str(script), {**os.environ, "FAKE_TORCH_MODE": str(tmp_path / "mode")}


def test_torch_op_that_crashes_is_recorded_and_the_rest_still_run(tmp_path: Path) -> None:
    python, env = _fake_python(tmp_path, "")
    report = run_torch_probe(python, env, timeout=120)
    assert report.load is not None and report.load.status == "pass"
    statuses = [(c.id, c.status) for c in report.cases]
    assert statuses == [("a", "pass"), ("b", "crashed"), ("c", "mismatch"), ("d", "pass")]
    assert report.summary == {"pass": 2, "crashed": 1, "mismatch": 1}
    crashed = report.case("b")
    assert crashed is not None and crashed.signal == "SIGSEGV" and crashed.area == "y"
    mismatch = report.case("c")
    assert mismatch is not None and (mismatch.max_abs_err, mismatch.max_rel_err) == (0.5, 0.25)
    assert report.environment["torch"] == "0.fake"


def test_torch_op_that_hangs_is_a_timeout(tmp_path: Path) -> None:
    python, env = _fake_python(tmp_path, "--hang")
    report = run_torch_probe(python, env, timeout=5)
    statuses = {c.id: c.status for c in report.cases}
    assert statuses == {"a": "pass", "b": "crashed", "c": "mismatch", "d": "timeout"}


def test_tolerances_are_dtype_aware() -> None:
    require(_has_torch(), "torch not installed (pip install torch==2.13.0)")
    import torch

    from zluda_runner.probe.torch_ops import _compare

    want = torch.linspace(-4, 4, 64, dtype=torch.float64)
    off = want * (1 + 5e-3)  # inside bfloat16's tolerance (rtol 1.6e-2), outside float16's/float32's (1e-3)
    assert _compare(off.to(torch.bfloat16), want)[0]
    assert not _compare(off.to(torch.float16), want)[0]
    ok, max_abs, _, why = _compare(off.float(), want)
    assert not ok and abs(max_abs - 2e-2) < 1e-6
    assert oc.tolerance("float32") == (1e-3, 1e-3) and why.startswith("60/64 "), why  # all but |x| <= 0.25
    assert _compare(want.float(), want)[0]
    nan = want.clone()
    nan[3] = float("nan")
    assert not _compare(nan.float(), want)[0]
    assert _compare(nan.float(), nan)[0]  # NaN where the reference has NaN: equal (equal_nan)
    ok, _, _, why = _compare(want[:10].float(), want)
    assert not ok and "shape" in why


def test_the_cublas_caveat_names_the_quick_probes_gemv_case() -> None:
    """Upstream ZLUDA's cuBLAS is GEMM only (gemv, nrm2: CUBLAS_STATUS_NOT_SUPPORTED; observed in
    v7-preview.10): the caveat of each release that has it names the quick probe's case that shows it on a
    user's GPU, and that case is in the probe (matrix x vector, float32: cuBLAS gemv)."""
    require(_has_torch(), "torch not installed (pip install torch==2.13.0)")
    import torch

    from zluda_runner.probe import torch_ops
    from zluda_runner.release.manifest import load_manifest

    ops = {op_id: (area, dtype) for op_id, area, _, dtype in torch_ops._ops(torch)}
    assert ops["blas.gemv"] == ("blas", "float32")
    named = {r.id for r in load_manifest().releases for c in r.caveats if "blas.gemv" in c.split()}
    assert named == {"upstream-v5", "upstream-v6", "upstream-v7-preview.10", "upstream-v7-preview.11"}
