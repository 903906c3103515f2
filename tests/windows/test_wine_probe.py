"""The driver probe and the torch probes on the real Windows CPython under Wine, each case isolated.

The driver is the probe's own stand-in (tests/fixtures/probe/standin_cuda.c, planted gaps: missing
functions, 101/801 results, an access violation in cuEventElapsedTime, a hang in
cuCtxGetStreamPriorityRange) built by mingw-w64 as ``nvcuda.dll`` (tests/fixtures/windows/
standin_driver.c), beside a stand-in ``cublas64_12.dll`` answering nrm2 and gemv NOT_SUPPORTED: the
Windows report must list exactly the gaps the Linux one lists. The torch
probes run PyPI's real Windows torch 2.13.0 (a CPU build).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import beside, standin_cublas
from tests.probe.test_probe_standin import EXPECTED
from tests.windows.test_wine_process import OUTER_JOB
from tests.windows.winpy import WinPython
from zluda_runner.core.version import JSON_SCHEMA_VERSION
from zluda_runner.core.wording import render
from zluda_runner.probe.cases import CATALOGUE
from zluda_runner.trace.workload import NOT_ON_WINDOWS, NOT_ON_WINDOWS_HINT

CONSOLE_HOSTS = {"conhost.exe", "explorer.exe"}
# torch_ops.py's smoke set
QUICK_OPS = {"matmul.fp32", "matmul.fp16", "matmul.bf16", "blas.gemv", "conv2d", "sdpa", "layer_norm",
             "softmax", "fft", "sort_topk", "index_scatter", "embedding", "random.seeded"}


@pytest.fixture(scope="module")
def standin_nvcuda(mingw_build, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    """The stand-in driver beside a stand-in ``cublas64_12.dll`` whose nrm2 and gemv answer NOT_SUPPORTED,
    as upstream ZLUDA's cuBLAS does (tests/fixtures/probe/standin_cublas.c), as on Linux."""
    posix = Path(__file__).resolve().parents[1] / "fixtures" / "windows" / "posix"
    driver = mingw_build(["windows/standin_driver.c"], "nvcuda.dll", args=[f"-I{posix}"],
                         deps=["probe/standin_cuda.c", "windows/posix/dlfcn.h"])
    cublas = standin_cublas(mingw_build, "UPSTREAM", "cublas64_12.dll")
    return beside(tmp_path_factory.mktemp("release"), (driver, "nvcuda.dll"), (cublas, "cublas64_12.dll"))


def _report(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    start = proc.stdout.find("{")
    assert start >= 0, f"exit {proc.returncode}, no JSON:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    report: dict[str, Any] = json.loads(proc.stdout[start:])
    return report


@pytest.fixture(scope="module")
def driver_report(winpy: WinPython, standin_nvcuda: Path) -> tuple[int, dict[str, Any]]:
    proc = winpy.zluda_run("probe", "--libcuda", winpy.winpath(standin_nvcuda), "--json", "--timeout", "5")
    return proc.returncode, _report(proc)


def test_driver_probe_lists_exactly_the_planted_gaps(driver_report: tuple[int, dict[str, Any]],
                                                     winpy: WinPython, standin_nvcuda: Path) -> None:
    rc, report = driver_report
    assert rc == 3  # cases failed, crashed, hung: as on Linux
    assert report["target"].lower() == winpy.winpath(standin_nvcuda).lower()
    assert report["load"]["status"] == "pass"
    assert report["coverage"]["present"] > 150  # read from the DLL's PE export table
    status = {c["id"]: c["status"] for c in report["cases"]}
    assert len(status) == len(CATALOGUE)
    for want, ids in EXPECTED.items():
        assert {i for i, s in status.items() if s == want} == ids, want
    planted = set().union(*EXPECTED.values())
    assert {i for i, s in status.items() if s == "pass"} == {c.id for c in CATALOGUE} - planted
    cases = {c["id"]: c for c in report["cases"]}
    # the cuBLAS beside the driver, loaded by its Windows name; its status named as cuBLAS names it
    cublas = winpy.winpath(standin_nvcuda.with_name("cublas64_12.dll"))
    assert cases["cublas.create"]["detail"].lower() == cublas.lower()
    for case_id, function in (("cublas.snrm2", "cublasSnrm2_v2"), ("cublas.sgemv", "cublasSgemv_v2")):
        case = cases[case_id]
        assert (case["result_code"], case["result_name"]) == (15, "CUBLAS_STATUS_NOT_SUPPORTED"), case
        call = {"function": function, "result": 15, "result_name": "CUBLAS_STATUS_NOT_SUPPORTED"}
        assert call in case["calls"]


def test_a_crash_and_a_hang_cost_only_their_own_case(driver_report: tuple[int, dict[str, Any]]) -> None:
    """The access violation ends one worker (its NTSTATUS named, its calls kept), the hang is killed
    with its tree at the timeout; fresh workers run every case after each."""
    _, report = driver_report
    cases = {c["id"]: c for c in report["cases"]}
    crashed = cases["event.elapsed_time"]
    assert crashed["signal"] == "STATUS_ACCESS_VIOLATION" and "cuEventElapsedTime_v2" in crashed["detail"]
    fatal = {"function": "cuEventElapsedTime_v2", "result": None, "result_name": "crashed"}
    assert crashed["calls"][-1] == fatal
    assert ("cuEventSynchronize", 0) in [(c["function"], c["result"]) for c in crashed["calls"]]
    hung = cases["context.stream_priority_range"]
    assert hung["status"] == "timeout" and hung["signal"] is None  # killed at the timeout, not crashed
    assert hung["calls"][-1]["function"] == "cuCtxGetStreamPriorityRange"
    order = [c["id"] for c in report["cases"]]
    after = order[order.index("event.elapsed_time") + 1:]
    assert after and all(cases[i]["status"] != "skipped" or "needs" in cases[i]["detail"] for i in after)


def test_a_file_that_is_no_dll_fails_to_load_and_skips_every_case(winpy: WinPython, tmp_path: Path) -> None:
    bogus = tmp_path / "nvcuda.dll"
    bogus.write_bytes(b"not a PE file\n" * 10)
    proc = winpy.zluda_run("probe", "--libcuda", winpy.winpath(bogus), "--json", "--timeout", "30")
    report = _report(proc)
    assert proc.returncode == 3
    assert report["load"]["status"] == "fail" and report["load"]["detail"].startswith("LoadLibrary failed")
    assert {c["status"] for c in report["cases"]} == {"skipped"}


def test_a_missing_driver_is_named_with_windows_wording(winpy: WinPython, tmp_path: Path) -> None:
    missing = winpy.winpath(tmp_path / "nvcuda.dll")
    proc = winpy.zluda_run("--json", "probe", "--libcuda", missing)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)
    assert (error["kind"], error["exit_code"]) == ("probe", 1) and missing in error["error"], error
    assert "(nvcuda.dll)" in error["hint"] and "libcuda.so" not in proc.stdout, error


def test_torch_quick_probe_says_no_cuda_device_on_a_cpu_torch(winpy: WinPython) -> None:
    proc = winpy.zluda_run("probe", "--torch", "--quick", "--native", "--json")
    report = _report(proc)
    assert proc.returncode == 1  # documented: the probe could not run at all (no device)
    assert report["load"]["status"] == "unavailable"
    # why, in torch's own words (torch.cuda.init() of a CPU build)
    assert "AssertionError: Torch not compiled with CUDA enabled" in report["load"]["detail"]
    assert report["environment"]["torch"] == "2.13.0+cpu" and report["cases"] == []


def test_torch_quick_probe_on_the_cpu_reports_every_op(winpy: WinPython) -> None:
    """Each op reported; one that kills the interpreter (Wine 8 runs some of torch's CPU kernels into
    an illegal instruction) is ``crashed`` with its NTSTATUS, and a fresh interpreter runs the rest."""
    proc = winpy.zluda_run("probe", "--torch", "--quick", "--device", "cpu", "--json")
    report = _report(proc)
    assert report["load"]["status"] == "pass", report["load"]
    cases = {c["id"]: c for c in report["cases"]}
    assert set(cases) == QUICK_OPS
    assert {c["status"] for c in cases.values()} <= {"pass", "crashed"}
    for case in cases.values():
        if case["status"] == "crashed":
            assert case["signal"] and case["signal"].startswith("STATUS_"), case
    passed = [i for i, c in cases.items() if c["status"] == "pass"]
    assert len(passed) >= len(cases) - 2, cases
    assert proc.returncode == (3 if len(passed) < len(cases) else 0)


def test_opinfo_probe_reaches_a_verdict_through_the_same_channel(winpy: WinPython) -> None:
    """The OpInfo probe's interpreter starts in its job, says why it cannot run its cases (torch's
    OpInfo database needs numpy, which the harness leaves out: numpy calls ucrtbase.crealf, which
    Wine 8 lacks) and the command exits 1 with that reason."""
    proc = winpy.zluda_run("probe", "--torch", "--native", "--device", "cpu", "--ops", "add", "--dtypes",
                           "float32", "--json")
    report = _report(proc)
    assert proc.returncode == 1
    assert report["load"]["status"] == "unavailable" and "'numpy'" in report["load"]["detail"], report["load"]
    assert report["environment"]["torch"] == "2.13.0+cpu"


def test_torch_probe_under_zluda_refuses_a_cpu_torch_clearly(winpy: WinPython) -> None:
    proc = winpy.zluda_run("--json", "probe", "--torch", "--quick")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)
    assert (error["kind"], error["exit_code"]) == ("target", 1) and "2.13.0+cpu" in error["error"], error
    assert "https://download.pytorch.org/whl/cu118" in error["hint"], error  # where a CUDA build is


@pytest.fixture(scope="module")
def injector_release(mingw_build, standin, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    """The least a plan for a plain .exe takes: a stand-in nvcuda.dll and the injector (zluda.exe)."""
    folder = tmp_path_factory.mktemp("release") / "ZLUDA"
    folder.mkdir()
    shutil.copyfile(standin("zluda nvcuda", "DRIVER", "nvcuda.dll"), folder / "nvcuda.dll")
    shutil.copyfile(mingw_build(["windows/injector.c"], "zluda.exe", shared=False, args=["-municode"]),
                    folder / "zluda.exe")
    return folder


def test_trace_on_windows_is_refused_clearly(winpy: WinPython, injector_release: Path, tmp_path: Path
                                             ) -> None:
    """The plan for Wine's own hostname.exe is fine (``run`` starts it); ``--trace`` says it cannot."""
    env = {"ZLUDA_RUNNER_CACHE": winpy.winpath(tmp_path / "cache")}
    base = ["--zluda-dir", winpy.winpath(injector_release)]
    program = "C:\\windows\\system32\\hostname.exe"
    ran = winpy.zluda_run(*base, "run", "--", program, env=env)
    assert ran.returncode == 0, ran.stderr
    traced = winpy.zluda_run(*base, "--json", "--trace", "--", program, env=env)
    assert traced.returncode == 1 and "Traceback" not in traced.stderr
    refusal = {"schema": JSON_SCHEMA_VERSION, "error": render(NOT_ON_WINDOWS, "command line"),
               "hint": render(NOT_ON_WINDOWS_HINT, "command line"), "exit_code": 1, "kind": "trace"}
    assert json.loads(traced.stdout) == refusal, traced.stdout
    # refused before anything is planned or fetched: a release that does not exist is not the error
    missing = winpy.winpath(tmp_path / "none")
    early = winpy.zluda_run("--zluda-dir", missing, "--json", "--trace", "--", program, env=env)
    assert early.returncode == 1, early.stderr
    assert json.loads(early.stdout) == refusal, early.stdout


def test_ctrl_c_during_the_probe_leaves_no_worker_running(winpy: WinPython, standin_nvcuda: Path,
                                                          tmp_path: Path) -> None:
    """A console Ctrl-C (pressed when the first case is reported) interrupts the probe; the worker,
    in its own console group and job, is killed with its tree: the driver's job ends up alone."""
    source = OUTER_JOB + r'''
from pathlib import Path
from zluda_runner.probe.runner import run_probe
k32 = ctypes.WinDLL("kernel32", use_last_error=True)
k32.FreeConsole()
assert k32.AllocConsole(), "no console to send Ctrl-C in"
pressed = []
def progress(result):
    if not pressed:
        pressed.append(result.id)
        assert k32.GenerateConsoleCtrlEvent(0, 0), ctypes.get_last_error()
try:
    run_probe(Path(sys.argv[1]), timeout=60.0, progress=progress)  # the hang case waits 60 s
    said = "finished"
except KeyboardInterrupt:
    said = "interrupted"
print("ANSWER", json.dumps({"said": said, "pressed": bool(pressed), **accounting(), "others": others()}),
      flush=True)
'''
    script = tmp_path / "driver.py"
    script.write_text(source, encoding="utf-8")
    proc = winpy.run([winpy.winpath(script), winpy.winpath(standin_nvcuda)], cwd=tmp_path, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ANSWER ")]
    assert lines, f"driver exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    answer = json.loads(lines[-1][len("ANSWER "):])
    assert answer["said"] == "interrupted" and answer["pressed"]
    # a worker ran (the first result pressed Ctrl-C), none is left: what may outlive it in the job is
    # what AllocConsole started there, the console host and (Wine) the desktop process it asks for
    # when none runs (Wine ends an idle desktop after a while: whether one runs depends on what ran before)
    assert answer["total"] >= 2 and set(answer["others"]) <= CONSOLE_HOSTS, answer
    assert answer["active"] == 1 + len(answer["others"]), answer
