"""Acceptance: for every target x stand-in release, the plan's prediction matches what the real loader
does (LD_DEBUG), and the launch makes every ``replace`` binding take."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.golden import assert_golden
from zluda_runner.conduct.context import run_context
from zluda_runner.conduct.plan import plan_run
from zluda_runner.core.settings import Settings
from zluda_runner.launch.linux import LinuxLaunch, compose_env, prepare_link_dir
from zluda_runner.launch.prepare import expected_bindings, launch_env
from zluda_runner.launch.verify import verify_bindings
from zluda_runner.plan.model import MECH_LD_AUDIT, MECH_LD_LIBRARY_PATH

CUBLAS = "libcublas.so.13"
# Stand-in variant -> the verdict the plan must give for libcublas.so.13.
VARIANTS = {"good": "ok", "no_soname": "ok", "no_versions": "fatal", "other_version": "fatal",
            "missing_symbol": "warn"}
# How each app reaches the "NVIDIA" libcublas.so.13, and the mechanism that must replace it.
EXPECTED_MECHANISM = {"rpath": MECH_LD_AUDIT, "runpath": MECH_LD_LIBRARY_PATH, "none": MECH_LD_LIBRARY_PATH}
EXPECTED_VIA = {"rpath": "rpath", "runpath": "runpath", "none": "not-found"}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT"):
        env.pop(var, None)
    return env


def _binding(plan, need: str):  # type: ignore[no-untyped-def]
    return next(b for b in plan.bindings if b.need == need)


@pytest.mark.parametrize("kind", ["rpath", "runpath", "none"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_prediction_matches_loader(kind: str, variant: str, apps, standin_releases, cache_dir: Path) -> None:
    app, release = apps[kind], standin_releases[variant]
    env = _clean_env()
    plan = plan_run(run_context([str(app)], Settings(zluda_dir=release, cache_dir=cache_dir), env)).plan

    cublas = _binding(plan, CUBLAS)
    assert (cublas.action, cublas.shim) == ("replace", str((release / CUBLAS).resolve()))
    assert cublas.found_now_via == EXPECTED_VIA[kind]
    assert cublas.mechanism == EXPECTED_MECHANISM[kind]
    assert cublas.verdict == VARIANTS[variant], cublas.reasons
    if variant == "no_soname":
        assert not cublas.problems
    driver = _binding(plan, "libcuda.so.1")
    assert (driver.action, driver.verdict) == ("replace", "ok")
    assert plan.argv == (str(app),)

    # The real loader, under the launch the plan makes.
    result = verify_bindings([str(app), "sgemm"], launch_env(plan, cache_dir, env), expected_bindings(plan),
                             timeout=30)
    evidence = {ev.name: ev for ev in result.bindings}
    assert evidence[CUBLAS].taken, evidence[CUBLAS].loader_lines
    assert evidence[CUBLAS].actual == (release / CUBLAS).resolve()
    # And what the program then does is what the verdict said.
    if VARIANTS[variant] == "ok":
        assert result.exit_code == 0
    else:
        assert result.exit_code != 0  # fatal: dies at the first binding; warn: dies calling the missing one


@pytest.mark.parametrize("variant", ["no_versions", "other_version", "missing_symbol"])
def test_faulty_shims_fail_as_predicted(variant: str, apps, standin_releases, cache_dir: Path) -> None:
    release = standin_releases[variant]
    settings = Settings(zluda_dir=release, cache_dir=cache_dir)
    plan = plan_run(run_context([str(apps["rpath"])], settings, _clean_env())).plan
    env = launch_env(plan, cache_dir, _clean_env())
    plain = subprocess.run([str(apps["rpath"])], env=env, capture_output=True, text=True, timeout=30)
    sgemm = subprocess.run([str(apps["rpath"]), "sgemm"], env=env, capture_output=True, text=True, timeout=30)
    problems = _binding(plan, CUBLAS).problems
    assert_golden(f"plan-faulty-shim-{variant}", "\n".join(problems) + "\n")  # what the plan says will fail
    reasons = " ".join(problems)
    if variant == "no_versions":
        assert "check_match" in reasons
        assert plain.returncode != 0 and "check_match" in plain.stderr
    elif variant == "other_version":
        assert plain.returncode != 0 and "undefined symbol: cublasCreate_v2" in plain.stderr
    else:  # a warning: runs until the missing symbol is called
        assert "cublasSgemm_v2" in reasons
        assert (plain.returncode, plain.stdout) == (0, "create=0\n")
        assert sgemm.returncode != 0 and "undefined symbol: cublasSgemm_v2" in sgemm.stderr


def test_ld_library_path_alone_loses_to_rpath(apps, standin_releases, orig_cublas: Path,
                                              tmp_path: Path) -> None:
    """Why the plan says LD_AUDIT for DT_RPATH: a link folder first on LD_LIBRARY_PATH does not win there,
    but does win over DT_RUNPATH."""
    release = standin_releases["good"]
    link_dir = prepare_link_dir(tmp_path, {CUBLAS: release / CUBLAS})
    env = compose_env(_clean_env(), LinuxLaunch(link_dir=link_dir))
    want = {CUBLAS: release / CUBLAS}
    rpath = verify_bindings([str(apps["rpath"])], env, want, timeout=30)
    runpath = verify_bindings([str(apps["runpath"])], env, want, timeout=30)
    assert not rpath.bindings[0].taken
    assert rpath.bindings[0].actual is not None
    assert rpath.bindings[0].actual.resolve() == orig_cublas.resolve()
    assert runpath.bindings[0].taken


def test_launch_output_comes_from_the_standin(apps, standin_releases, zluda_run, tmp_path: Path) -> None:
    """Without zluda-run the app gets NVIDIA's answer (42); through it, the stand-in's (0)."""
    app = str(apps["rpath"])
    direct = subprocess.run([app], capture_output=True, text=True, timeout=30)
    release = str(standin_releases["good"])
    through = zluda_run(["--cache-dir", str(tmp_path), "--zluda-dir", release, "--", app])
    assert direct.stdout == "create=42\n"
    assert (through.returncode, through.stdout) == (0, "create=0\n"), through.stderr


def test_child_processes_inherit_the_set_up(apps, standin_releases, zluda_run, tmp_path: Path) -> None:
    """Like torchrun's workers: a child the workload starts binds the stand-in too (evidence per pid)."""
    import json

    release = standin_releases["good"]
    app = str(apps["rpath"])
    direct = subprocess.run([app, "spawn"], capture_output=True, text=True, timeout=30)
    assert direct.stdout == "create=42\ncreate=42\n"
    proc = zluda_run(["--cache-dir", str(tmp_path), "--zluda-dir", str(release), "--verify-load", "--json",
                      "--", app, "spawn"])
    assert proc.returncode == 0, proc.stderr
    first_two = proc.stdout.split("\n", 2)
    assert first_two[:2] == ["create=0", "create=0"]
    evidence = json.loads(first_two[2])["verify_load"]
    cublas = next(b for b in evidence["bindings"] if b["name"] == CUBLAS)
    assert cublas["state"] == "taken" and len(cublas["pids"]) == 2  # parent and child both took it


def test_verify_load_cli_reports_every_binding(apps, standin_releases, zluda_run, tmp_path: Path) -> None:
    release = standin_releases["good"]
    proc = zluda_run(["--cache-dir", str(tmp_path), "--zluda-dir", str(release), "--verify-load", "--",
                      str(apps["rpath"]), "sgemm"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "create=0\nsgemm=0\n"
    line = next(x for x in proc.stderr.splitlines() if CUBLAS in x and "->" in x)
    assert line.split()[0] == "taken" and line.endswith(str((release / CUBLAS).resolve()))
    assert "libcuda.so.1" in proc.stderr and "unused" in proc.stderr  # never asked for by this app


def test_real_cudart_loads_the_standin_driver(cudart_client: Path, standin_releases, zluda_run,
                                              tmp_path: Path) -> None:
    release = standin_releases["good"]
    direct = subprocess.run([str(cudart_client)], capture_output=True, text=True, timeout=30,
                            env=_clean_env())
    assert "version=13000" not in direct.stdout  # no driver here: cudart reports none
    proc = zluda_run(["--cache-dir", str(tmp_path), "--zluda-dir", str(release), "--verify-load", "--json",
                      "--", str(cudart_client)])
    assert proc.returncode == 0, proc.stderr
    # cudart dlopened libcuda.so.1 and got cuDriverGetVersion via cuGetProcAddress: the stand-in answered.
    first, _, rest = proc.stdout.partition("\n")
    assert "cudaDriverGetVersion=0 version=13000" in first
    import json

    evidence = json.loads(rest)["verify_load"]
    driver = next(b for b in evidence["bindings"] if b["name"] == "libcuda.so.1")
    assert driver["state"] == "taken" and driver["actual"] == str((release / "libcuda.so.1").resolve())
    assert any("libcuda.so.1" in line for line in driver["loader_lines"])


def test_trace_through_zluda_run_records_cudart_lookups(cudart_client: Path, standin_releases, zluda_run,
                                                      tmp_path: Path) -> None:
    """`zluda-run --trace`: our interposer sits between the real libcudart and the planned driver."""
    import json

    release = standin_releases["good"]
    out = tmp_path / "trace.json"
    proc = zluda_run(["--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(release), "--trace",
                      "--trace-out", str(out), "--", str(cudart_client)])
    assert proc.returncode == 0, proc.stderr
    assert "cudaDriverGetVersion=0 version=13000" in proc.stdout  # the calls still reach the stand-in
    report = json.loads(out.read_text())
    assert report["schema"] == 1 and report["source"] == "interposer" and len(report["processes"]) == 1
    lookups = {(x["symbol"], x["found"]) for x in report["proc_address_lookups"]}
    assert len(report["proc_address_lookups"]) > 400  # cudart 13 asks for ~450 entry points
    assert ("cuDriverGetVersion", True) in lookups
    calls = {c["function"]: c for c in report["calls"]}
    assert calls["cuGetProcAddress_v2"]["count"] >= 400 and "cuInit" in calls
    assert str(out) in proc.stderr  # says where the report went
    # the traced run is kept in the results store, one item per driver function
    cache = str(tmp_path / "cache")
    listed = zluda_run(["--cache-dir", cache, "--json", "results", "list", "--kind", "trace"])
    [run] = json.loads(listed.stdout)["runs"]
    shown = zluda_run(["--cache-dir", cache, "--json", "results", "show", run["run_id"]])
    items = {item["item"] for item in json.loads(shown.stdout)["run"]["items"]}
    assert {"cuInit", "cuGetProcAddress_v2"} <= items


def test_trace_out_unwritable_is_refused_before_the_workload_runs(cudart_client: Path, standin_releases,
                                                                   zluda_run, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    proc = zluda_run(["--json", "--cache-dir", str(tmp_path / "cache"),
                      "--zluda-dir", str(standin_releases["good"]), "--trace",
                      "--trace-out", str(blocker / "trace.json"), "--", str(cudart_client)])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)
    assert error["kind"] == "output-file" and error["hint"], error
    assert str(blocker / "trace.json") in error["error"], error
    assert not (tmp_path / "cache" / "traces").exists()  # checked first, as --html is: nothing ran


@pytest.mark.parametrize("onto", ["results.db", "results.db-wal"])
def test_trace_out_onto_the_results_store_is_refused_and_the_store_kept(
        cudart_client: Path, standin_releases, zluda_run, tmp_path: Path, onto: str) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    store = cache / "results.db"
    store.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84)
    (cache / "results.db-wal").write_bytes(b"")
    before = store.read_bytes()
    proc = zluda_run(["--json", "--cache-dir", str(cache), "--zluda-dir", str(standin_releases["good"]),
                      "--trace", "--trace-out", str(cache / onto), "--", str(cudart_client)])
    assert proc.returncode == 1, proc.stderr  # 7859508: exit 0, the store replaced by a 400-byte trace
    error = json.loads(proc.stdout)
    assert error["kind"] == "output-file" and str(store) in error["error"], error
    assert "Traceback" not in proc.stderr
    assert store.read_bytes() == before
