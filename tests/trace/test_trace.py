"""Our interposer: cudart's lookups and GUIDs, cuGetProcAddress itself wrapped, stack args, fork/exec."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from zluda_runner.core.errors import CommandNotFoundError, TraceError
from zluda_runner.trace.interposer import build_interposer, export_names
from zluda_runner.trace.model import TraceReport
from zluda_runner.trace.run import run_traced


def test_interposer_exports_every_reference_symbol(trace_cache: Path) -> None:
    from zluda_runner.probe.coverage import exported_functions

    lib = build_interposer(trace_cache)
    assert exported_functions(lib) >= set(export_names())


def test_cudart_lookups_and_export_tables(
    cc_build, cudart_path: Path, standin_ok: Path, trace_cache: Path, tmp_path: Path
) -> None:
    client = cc_build(
        ["probe/cudart_client.c"],
        "cudart_client",
        shared=False,
        args=[str(cudart_path), f"-Wl,-rpath,{cudart_path.parent}"],
    )
    report = run_traced(
        [str(client), "fork"], os.environ, real_libcuda=standin_ok, out_dir=tmp_path, cache_dir=trace_cache
    )
    assert report.source == "interposer" and report.exit_code == 0
    assert len(report.processes) == 2  # the client and its fork+exec'd child, one file each
    assert sorted(p.argv[-1] for p in report.processes) == ["child", "fork"]
    found = [x for x in report.proc_address_lookups if x.found]
    assert len(found) > 300  # cudart 13 asks for ~440 entry points
    assert {x.count for x in found} == {2}  # merged over both processes
    assert any(x.symbol == "cuInit" for x in found)
    assert report.export_tables and all(t.guid.startswith("{") for t in report.export_tables)
    gpa = report.call("cuGetProcAddress_v2")
    assert gpa is not None and gpa.count >= 2 * len(found) // 2
    init = report.call("cuInit")
    assert init is not None and init.results == {"CUDA_SUCCESS": 2}
    assert TraceReport.from_json(report.to_json()).calls == report.calls


def test_wrapped_proc_address_and_stack_arguments(
    cc_build, standin: Path, trace_cache: Path, tmp_path: Path
) -> None:
    client = cc_build(["probe/direct_client.c"], "direct_client", shared=False, args=["-ldl"])
    report = run_traced(
        [str(client)], os.environ, real_libcuda=standin, out_dir=tmp_path, cache_dir=trace_cache
    )
    assert report.exit_code == 0  # the 11-argument cuLaunchKernel computed the right sums
    lookups = {(x.symbol, x.found) for x in report.proc_address_lookups}
    assert ("cuGetProcAddress", True) in lookups and ("cuInit", True) in lookups
    assert ("cuMemAllocManaged", False) in lookups
    gpa = report.call("cuGetProcAddress_v2")
    assert gpa is not None and gpa.count == 6  # one direct call, five through the handed-out pointer
    launch = report.call("cuLaunchKernel")
    assert launch is not None and launch.results == {"CUDA_SUCCESS": 1, "CUDA_ERROR_INVALID_VALUE": 1}
    assert launch.first_failure is not None and launch.first_failure.call_number == 2
    count = report.call("cuDeviceGetCount")
    assert count is not None and count.count == 1  # exported symbol, called directly


def test_bad_inputs(tmp_path: Path, standin: Path, trace_cache: Path) -> None:
    with pytest.raises(TraceError):
        run_traced([], os.environ, real_libcuda=standin, out_dir=tmp_path)
    with pytest.raises(TraceError):
        run_traced(["true"], os.environ, real_libcuda=tmp_path / "missing.so", out_dir=tmp_path)
    report = run_traced(["true"], os.environ, real_libcuda=standin, out_dir=tmp_path, cache_dir=trace_cache)
    assert report.processes == () and report.warnings  # no process loaded libcuda: said, not lost
    with pytest.raises(CommandNotFoundError) as err:
        run_traced(
            ["no-such-command-zr"], os.environ, real_libcuda=standin, out_dir=tmp_path, cache_dir=trace_cache
        )
    assert err.value.hint
    killed = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    report = run_traced(killed, os.environ, real_libcuda=standin, out_dir=tmp_path, cache_dir=trace_cache)
    assert report.exit_code == 128 + 9  # like a shell: signal N -> 128+N


def test_floats_nesting_threads_forks_and_exit_from_a_thread(
    cc_build, standin_ok: Path, trace_cache: Path, tmp_path: Path
) -> None:
    """stress_client.c: exact counts under 4 racing threads, float arguments intact, a nested call,
    a forked child with its own counts, one ending with _exit() listed as missing, exit() from a thread."""
    from zluda_runner.trace.counts import NO_COUNTS_WARNING

    client = cc_build(
        ["probe/stress_client.c"], "stress_client", shared=False, args=["-O2", "-ldl", "-pthread"]
    )
    report = run_traced(
        [str(client)], os.environ, real_libcuda=standin_ok, out_dir=tmp_path, cache_dir=trace_cache
    )
    assert report.exit_code == 0  # every result right, including float arguments and the nested call
    assert len(report.processes) == 3
    parent = next(p for p in report.processes if p.argv)
    children = [p for p in report.processes if p is not parent]
    assert parent.complete and all(c.ppid == parent.pid for c in children)
    calls = {c.function: c for c in parent.calls}
    version = calls["cuDriverGetVersion"]  # threads, nested, exiter; one failure per thread
    assert version.results == {"CUDA_SUCCESS": 4 * 20000 + 2, "CUDA_ERROR_INVALID_VALUE": 4}
    assert version.first_failure is not None and version.first_failure.code == 1
    assert calls["cuTexRefSetMipmapLevelClamp"].results == {"CUDA_SUCCESS": 2}
    assert calls["cuLaunchHostFunc"].results == {"CUDA_SUCCESS": 1}
    assert calls["cuGetProcAddress"].count == 1  # the 4-argument lookup handed out for version 11030
    racing = [x for x in parent.proc_address_lookups if x.version == 2000]
    assert sum(x.count for x in racing) == 4 * 20 and all(x.found for x in racing)
    exited = next(c for c in children if c.complete)
    assert [(c.function, c.results) for c in exited.calls] == [("cuDriverGetVersion", {"CUDA_SUCCESS": 7})]
    quick = next(c for c in children if not c.complete)
    assert quick.calls == [] and quick.warnings == [NO_COUNTS_WARNING]
    assert any(w == f"pid {quick.pid}: {NO_COUNTS_WARNING}" for w in report.warnings)
    assert report.call("cuDriverGetVersion").count == 4 * 20001 + 2 + 7  # type: ignore[union-attr]


def test_tracing_a_windows_plan_is_refused_clearly() -> None:
    """The tracer interposes on libcuda.so.1: on Windows (or for a Windows plan) it says so, exit 1."""
    from zluda_runner.trace.workload import check_supported

    with pytest.raises(TraceError) as caught:
        check_supported("windows")
    assert caught.value.exit_code == 1
    # worded for its reader: a Python caller reads the API's call, the command line the command
    assert caught.value.message.startswith("zluda_runner.trace_launch() is not supported on Windows")
    assert caught.value.hint and "zluda_runner.run_probe()" in caught.value.hint
    assert caught.value.hint_for("command line").startswith("trace the workload on Linux; on Windows "
                                                            "`zluda-run probe --libcuda nvcuda.dll` shows")
    if sys.platform != "win32":
        check_supported("linux")  # no refusal where it works
