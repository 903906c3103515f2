"""warmup runs the release's own zluda_precompile where the release ships one (upstream v6+), with its
command line (vosen/ZLUDA zluda_precompile/src/main.rs@8a7931be: ``zluda_precompile [--device N]
[--follow-links] PATH``), under the launch's environment; else, or when it fails, the workload as before.

The release is a stand-in (a built libcuda.so.1) with a stand-in ``zluda_precompile`` built here that
records its argv and environment and writes a ``zluda2.db`` into ZLUDA's cache folder."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest

from tests.golden import assert_golden
from zluda_runner.conduct.run import prepare_run
from zluda_runner.core.settings import Settings
from zluda_runner.devtools.standin import build_release, libs_from_spec
from zluda_runner.launch.warmup import (
    METHOD_FALLBACK,
    METHOD_PRECOMPILE,
    METHOD_WORKLOAD,
    WarmupReport,
    precompile_job,
    precompile_tool,
    warmup,
)
from zluda_runner.plan.model import PlanTarget, ReleaseRef, ShimPlan
from zluda_runner.report.warmup_view import render_warmup as render_text

# Records "argv[0..n]" and LD_LIBRARY_PATH in $PRECOMPILE_LOG, says whether libcuda.so.1 sits beside it
# (zluda_precompile loads the driver from its own folder), writes zluda2.db, exits $PRECOMPILE_EXIT.
PRECOMPILE_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
int main(int argc, char **argv) {
    FILE *log = fopen(getenv("PRECOMPILE_LOG"), "w");
    for (int i = 0; i < argc; i++) fprintf(log, "argv %s\n", argv[i]);
    const char *llp = getenv("LD_LIBRARY_PATH");
    fprintf(log, "LD_LIBRARY_PATH %s\n", llp ? llp : "");
    char self[4096] = {0};
    if (readlink("/proc/self/exe", self, sizeof self - 64) > 0) {
        strcpy(strrchr(self, '/'), "/libcuda.so.1");
        struct stat st;
        fprintf(log, "driver_beside %s\n", stat(self, &st) == 0 ? "yes" : "no");
    }
    fclose(log);
    const char *cache = getenv("ZLUDA_TEST_CACHE");
    if (cache) {
        FILE *db = fopen(cache, "w");
        for (int i = 0; i < 2048; i++) fputc('k', db);
        fclose(db);
    }
    const char *code = getenv("PRECOMPILE_EXIT");
    return code ? atoi(code) : 0;
}
"""

# The workload: a program that says it ran.
APP_C = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) { FILE *f = fopen(getenv("APP_RAN"), "w"); fputs("ran", f); fclose(f); return 6; }
"""


@pytest.fixture(scope="module")
def built(cc_build, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    src = tmp_path_factory.mktemp("precompile-src")
    (src / "zluda_precompile.c").write_text(PRECOMPILE_C)
    (src / "cuda_app.c").write_text(APP_C)
    return {"tool": cc_build([src / "zluda_precompile.c"], "zluda_precompile", shared=False),
            "app": cc_build([src / "cuda_app.c"], "cuda_app", shared=False)}


def _release(tmp_path: Path, tool: Path | None) -> Path:
    libs = libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}})
    release = build_release(libs, tmp_path / "zluda", build_dir=tmp_path / "build")
    if tool is not None:
        (release / "zluda_precompile").write_bytes(tool.read_bytes())
        (release / "zluda_precompile").chmod(0o755)
    return release


def _prepared(tmp_path: Path, built: dict[str, Path], *, tool: bool = True,
              extra: dict[str, str] | None = None) -> tuple[object, dict[str, str], Path]:
    release = _release(tmp_path, built["tool"] if tool else None)
    app = tmp_path / "cuda_app"
    app.write_bytes(built["app"].read_bytes())
    app.chmod(0o755)
    settings = Settings(zluda_dir=release, cache_dir=tmp_path / "zr-cache")
    run = prepare_run([str(app)], settings)
    cache = tmp_path / "xdg" / "zluda" / "ComputeCache"
    cache.mkdir(parents=True)
    env = {**run.env, "PRECOMPILE_LOG": str(tmp_path / "precompile.log"), "APP_RAN": str(tmp_path / "ran"),
           "ZLUDA_TEST_CACHE": str(cache / "zluda2.db"), **(extra or {})}
    return run, env, cache


def _shown(report: WarmupReport) -> str:
    """The warmup's totals for ``cuda_app`` as the user sees them, its time fixed at 1.5 s."""
    return render_text(dataclasses.replace(report, elapsed_s=1.5), "cuda_app") + "\n"


def _log(tmp_path: Path) -> list[str]:
    return (tmp_path / "precompile.log").read_text().splitlines()


def test_warmup_runs_the_releases_zluda_precompile_on_the_program(tmp_path: Path, built) -> None:
    run, env, cache = _prepared(tmp_path, built)
    app = str(tmp_path / "cuda_app")
    tool = str(Path(run.plan.release.root) / "zluda_precompile")
    assert precompile_job(run.plan).argv == [tool, os.path.realpath(app)]
    report = warmup(run.argv, env, [cache], plan=run.plan, heartbeat_s=60)
    assert report.method == METHOD_PRECOMPILE and report.exit_code == 0 and report.precompile_exit == 0
    log = _log(tmp_path)
    # upstream's command line: the tool, then the one PATH to scan
    argv = [line for line in log if line.startswith("argv ")]
    assert argv == [f"argv {tool}", f"argv {os.path.realpath(app)}"]
    said = dict(line.split(" ", 1) for line in log if not line.startswith("argv "))
    assert said["driver_beside"] == "yes"  # libcuda.so.1 in the tool's own folder, where it loads it from
    # run under the launch's loader set-up (the plan's link folder first), as the workload would be
    assert said["LD_LIBRARY_PATH"].split(":")[0].startswith(str(tmp_path / "zr-cache"))
    assert (report.grew_bytes, report.grew_files) == (2048, 1)
    assert not (tmp_path / "ran").exists()  # the workload itself did not run
    assert_golden("warmup_precompiled", _shown(report), tmp=tmp_path)  # the release's tool, on the program


def test_a_failing_precompile_falls_back_to_the_workload(tmp_path: Path, built) -> None:
    run, env, cache = _prepared(tmp_path, built, extra={"PRECOMPILE_EXIT": "3"})
    report = warmup(run.argv, env, [cache], plan=run.plan, heartbeat_s=60)
    assert report.method == METHOD_FALLBACK and report.precompile_exit == 3
    assert report.exit_code == 6 and (tmp_path / "ran").read_text() == "ran"
    assert report.grew_bytes == 2048  # counted from before the precompiler ran
    assert_golden("warmup_precompile_failed", _shown(report), tmp=tmp_path)  # exit 3, then the workload


def test_without_precompile_or_a_precompiler_the_workload_runs(tmp_path: Path, built) -> None:
    run, env, cache = _prepared(tmp_path / "a", built)
    report = warmup(run.argv, env, [cache], plan=run.plan, precompile=False, heartbeat_s=60)
    assert report.method == METHOD_WORKLOAD and report.exit_code == 6 and report.precompile_argv == []
    assert not (tmp_path / "a" / "precompile.log").exists()
    bare, env, cache = _prepared(tmp_path / "b", built, tool=False)
    assert precompile_tool(bare.plan) is None
    assert warmup(bare.argv, env, [cache], plan=bare.plan, heartbeat_s=60).method == METHOD_WORKLOAD


def test_the_precompiler_is_a_regular_executable_file_of_the_release(tmp_path: Path) -> None:
    release = tmp_path / "zluda"
    release.mkdir()
    torch = tmp_path / "site-packages" / "torch"
    (torch / "lib").mkdir(parents=True)

    def plan(os_name: str) -> ShimPlan:
        return ShimPlan(release=ReleaseRef(None, None, None, None, str(release)),
                        target=PlanTarget(python=sys.executable, torch="2.7.0+cu128", torch_path=str(torch)),
                        os=os_name)

    assert precompile_job(plan("linux")) is None
    outside = tmp_path / "elsewhere"
    outside.write_text("#!/bin/sh\n")
    outside.chmod(0o755)
    (release / "zluda_precompile").symlink_to(outside)  # a link is never run
    assert precompile_tool(plan("linux")) is None
    (release / "zluda_precompile").unlink()
    (release / "zluda_precompile").write_text("#!/bin/sh\n")  # not executable
    assert precompile_tool(plan("linux")) is None
    (release / "zluda_precompile").chmod(0o755)
    job = precompile_job(plan("linux"))
    assert job is not None and job.argv == [str(release / "zluda_precompile"), str(torch / "lib")]
    (release / "zluda_precompile.exe").write_bytes(b"MZ")  # Windows: the .exe of the zip
    assert precompile_job(plan("windows")).argv == [str(release / "zluda_precompile.exe"), str(torch / "lib")]


def test_the_warmup_command_uses_the_precompiler_unless_told_not_to(tmp_path: Path, built) -> None:
    """`zluda-run warmup` (the console entry, through the API) runs the release's zluda_precompile;
    `--no-precompile` runs the workload; `--clear-caches` removes ZLUDA's compile cache first."""
    import json
    import subprocess

    release = _release(tmp_path, built["tool"])
    app = tmp_path / "cuda_app"
    app.write_bytes(built["app"].read_bytes())
    app.chmod(0o755)
    home = tmp_path / "home"
    cache = home / ".cache" / "zluda" / "ComputeCache"
    cache.mkdir(parents=True)
    stale = cache / "zluda2.db"
    stale.write_bytes(b"old")
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
           "ZLUDA_RUNNER_CACHE": str(tmp_path / "zr-cache"),
           "PRECOMPILE_LOG": str(tmp_path / "precompile.log"), "APP_RAN": str(tmp_path / "ran")}

    def warm(*flags: str) -> dict[str, object]:
        done = subprocess.run([sys.executable, "-m", "zluda_runner", "--json", "--zluda-dir", str(release),
                               "warmup", *flags, "--", str(app)], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode in (0, 6), done.stderr[-2000:]
        return json.loads(done.stdout)

    first = warm("--clear-caches")
    assert first["method"] == METHOD_PRECOMPILE and not (tmp_path / "ran").exists()
    assert str(stale) in json.dumps(first["cleared"]) and not stale.exists()
    assert (tmp_path / "precompile.log").is_file()
    second = warm("--no-precompile")
    assert second["method"] == METHOD_WORKLOAD and (tmp_path / "ran").read_text() == "ran"
