"""``zluda-run poc`` on the official Windows CPython under Wine: the command answers --help; a native
verdict over a tiny workload (tests/poc/workload.py) runs to a complete report -- "on the GPU" failing
with the reason Windows' GPU counters give under Wine, the other criteria judged, a planted wrong output
failing "right" -- without a traceback; and the same workload through a fork-shaped stand-in release
(PyPI's Windows torch made a CUDA 11.8 build, as tests/windows/test_wine_launch.py) runs under the plan.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.golden import assert_golden
from tests.windows.report_lines import read_report
from tests.windows.winpy import WinPython, winpath
from zluda_runner.results.backends import SQLiteStore

pytestmark = pytest.mark.slow

WORKLOAD = Path(__file__).resolve().parents[1] / "poc" / "workload.py"


def test_poc_answers_help(winpy: WinPython) -> None:
    helped = winpy.zluda_run("poc", "--help", env={"COLUMNS": "80"})
    assert helped.returncode == 0, helped.stdout + helped.stderr
    assert_golden("wine-poc-help", helped.stdout)


@pytest.mark.parametrize("layout", ["regular", "portable"])
def test_poc_native_run_reports_every_criterion(layout: str, winpy: WinPython, winpy_portable: WinPython,
                                                tmp_path: Path) -> None:
    py = winpy if layout == "regular" else winpy_portable
    env = {"ZLUDA_RUNNER_CACHE": py.winpath(tmp_path / "cache")}
    html = tmp_path / "poc.html"
    argv = ["--no-record", "--json", "poc", "--native", "--runs", "2", "--min-speedup", "0",
            "--html", py.winpath(html), "--", py.winpath(py.exe), py.winpath(WORKLOAD)]
    proc = py.zluda_run(*argv, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    status = {c["name"]: c["status"] for c in report["criteria"]}
    assert status == {"ran": "pass", "right": "pass", "on the GPU": "fail", "stable": "pass", "speed": "pass"}
    gpu = next(c for c in report["criteria"] if c["name"] == "on the GPU")
    assert gpu["summary"].startswith("not shown: no GPU telemetry") and report["telemetry"]
    assert report["mode"] == "native" and [r["exit_code"] for r in report["runs"]] == [0, 0]
    assert "<svg" in html.read_text(encoding="utf-8")
    planted = py.zluda_run(*argv[:-3], "--", py.winpath(py.exe), py.winpath(WORKLOAD),
                           env={**env, "POC_PLANT": "1"})
    assert planted.returncode == 3 and "Traceback" not in planted.stderr, planted.stderr
    wrong = json.loads(planted.stdout)
    right = next(c for c in wrong["criteria"] if c["name"] == "right")
    compared = {(c["name"], c["status"]) for r in wrong["runs"] for c in r["comparisons"]}
    assert right["status"] == "fail" and ("values", "differ") in compared, compared


@pytest.fixture(scope="module")
def fork(mingw_build, standin, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    """A fork-shaped release: a reporting nvcuda.dll stand-in, stubs for the rest, an injector."""
    folder = tmp_path_factory.mktemp("poc-fork") / "ZLUDA"
    folder.mkdir()
    shutil.copyfile(standin("zluda nvcuda", "DRIVER", "nvcuda.dll"), folder / "nvcuda.dll")
    shutil.copyfile(standin("zluda nvml", "NVML", "nvml.dll"), folder / "nvml.dll")
    shutil.copyfile(standin("zluda cublas", "CUBLAS", "cublas.dll"), folder / "cublas.dll")
    for name, flag in {"cusparse.dll": "CUSPARSE", "cufft.dll": "CUFFT", "cufftw.dll": "CUFFTW",
                       "nvrtc.dll": "NVRTC"}.items():
        shutil.copyfile(mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}"]), folder / name)
    shutil.copyfile(mingw_build(["windows/injector.c"], "zluda.exe", shared=False, args=["-municode"]),
                    folder / "zluda.exe")
    shutil.copyfile(mingw_build(["plan/win_stub.c"], "zluda_redirect.dll"), folder / "zluda_redirect.dll")
    return folder


def test_poc_through_a_standin_windows_release(new_cuda11_winpy, fork: Path,  # type: ignore[no-untyped-def]
                                               tmp_path: Path) -> None:
    py: WinPython = new_cuda11_winpy(portable=False)
    env = {"ZLUDA_RUNNER_CACHE": winpath(tmp_path / "cache")}
    db = tmp_path / "results.db"
    proc = py.zluda_run("--results-db", winpath(db), "--zluda-dir", winpath(fork), "--json", "poc",
                        "--runs", "2", "--min-speedup", "0", "--", winpath(py.exe), winpath(WORKLOAD),
                        "--driver", env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 3, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["mode"] == "zluda" and report["release"]
    # the runs under test went through the plan's launch: ZLUDA's nvcuda.dll stand-in answered them
    for run in report["runs"]:
        assert "cuDriverGetVersion" in read_report(run["stdout_tail"]).functions("zluda nvcuda"), run
        assert run["stdout_tail"].rstrip().endswith(f"release {report['release']}")
    assert report["reference_runs"][0]["stdout_tail"].rstrip().endswith("release as given")
    status = {c["name"]: c["status"] for c in report["criteria"]}
    assert status == {"ran": "pass", "right": "pass", "on the GPU": "fail", "stable": "pass", "speed": "pass"}
    assert report["reference_runs"][0]["argv"] == [winpath(py.exe), winpath(WORKLOAD), "--driver"]
    # recorded under the release and the torch the plan took (7859508: "none" and "-"), with its options
    with SQLiteStore(db).open() as store:
        [run] = store.list_runs()
    assert (run.kind, run.release_id, run.target) == ("poc", "zluda-dir", {"torch_version": "2.13.0+cpu",
                                                                            "cuda_major": 11})
    assert run.command[run.command.index("poc"):][:5] == ["poc", "--runs", "2", "--min-speedup", "0.0"]
