"""Acceptance (issue 10): a release of the real upstream v6 shape, run for real under glibc's ld.so.

The shims are built the way a Rust cdylib comes out (gcc without ``-soname``: no DT_SONAME, no
DT_VERDEF, a DT_VERSYM from its versioned libc imports, an unversioned DT_NEEDED on
``libamdhip64.so``), or with a SONAME. The target behaves like PyPI torch 2.14 (cu130): it
preloads NVIDIA's libraries by full path, then loads ``libtorch_cuda.so`` (DT_RPATH to
nvidia/cu13/lib, versioned references), then NVIDIA's ``libcusolver.so.12``, which has version
needs on the shims' names. It is started through a shell script, so the plan cannot inspect it and
sets up everything. Every case must import cleanly, and the loader's own log must prove each
binding; the release's path-answering zluda_ld is used only where the plan shows it works.
Sources: tests/fixtures/launch/realshape/ (from the issue 10 loader study).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.golden import assert_golden
from zluda_runner.binfmt.elf import read_elf
from zluda_runner.conduct.context import run_context
from zluda_runner.conduct.plan import plan_run
from zluda_runner.conduct.resolve import ASSUMED_PREFIX
from zluda_runner.core.settings import Settings
from zluda_runner.devtools.standin_v6 import zluda_ld_source
from zluda_runner.launch.prepare import expected_bindings, launch_env
from zluda_runner.launch.verdict import TAKEN, UNPROVEN
from zluda_runner.launch.verify import verify_bindings
from zluda_runner.loader.glibc import AUDIT_PATH, LoaderEnv, LoaderModel

SRC = "launch/realshape"
NV_NAMES = {"libcublas.so.13": "CUBLAS", "libcublasLt.so.13": "CUBLASLT", "libcusparse.so.12": "CUSPARSE"}
# release file -> (macro, CUDA names linked to it)
SHIMS = {
    "libcublas.so": ("CUBLAS", ["libcublas.so.13"]),
    "libcublaslt.so": ("CUBLASLT", ["libcublasLt.so.13"]),
    "libcusparse.so": ("CUSPARSE", ["libcusparse.so.12"]),
    "libnvcuda.so": ("CUDA", ["libcuda.so.1", "libcuda.so"]),
}
PROVEN = ["libcublas.so.13", "libcublasLt.so.13", "libcusparse.so.12", "libcuda.so.1"]


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT",
                                                            "ROCM_PATH", "HIP_PATH")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def world(cc_build: Callable[..., Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """NVIDIA originals + torch-like target + ROCm stub, laid out like a venv, and the wrapper script."""
    base = tmp_path_factory.mktemp("realshape")
    # the host is a fake tree (ZLUDA_RUNNER_ROOT) whose /opt/rocm/lib holds the ROCm stub
    target, nv, rocm = base / "target", base / "target/nvidia/cu13/lib", base / "root/opt/rocm/lib"
    for d in (nv, rocm):
        d.mkdir(parents=True)
    shutil.copy2(cc_build([f"{SRC}/hipstub.c"], "libamdhip64.so"), rocm / "libamdhip64.so")

    def nvidia(name: str, macro: str, extra: list[str]) -> None:
        script = base / f"{name}.map"
        script.write_text(f"{name} {{ global: *; }};\n")
        built = cc_build([f"{SRC}/lib.c"], name, deps=[script], args=[
            f"-D{macro}", f'-DWHO="nvidia {name}"', f"-Wl,-soname,{name}", f"-Wl,--version-script={script}",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN", f"-L{nv}", *extra, "-ldl"])
        shutil.copy2(built, nv / name)

    nvidia("libcublasLt.so.13", "CUBLASLT", [])
    nvidia("libcusparse.so.12", "CUSPARSE", [])
    nvidia("libcublas.so.13", "CUBLAS", ["-DNVIDIA_CUBLAS_NEEDS_LT", "-l:libcublasLt.so.13"])
    nvidia("libcusolver.so.12", "CUSOLVER", ["-l:libcublas.so.13", "-l:libcublasLt.so.13",
                                             "-l:libcusparse.so.12"])
    torch_cuda = cc_build([f"{SRC}/torch_cuda.c"], "libtorch_cuda.so", args=[
        "-Wl,--disable-new-dtags,-rpath,$ORIGIN/nvidia/cu13/lib", f"-L{nv}", "-l:libcublas.so.13",
        "-l:libcublasLt.so.13", "-l:libcusparse.so.12", "-ldl"])
    shutil.copy2(torch_cuda, target / "libtorch_cuda.so")
    pyish = cc_build([f"{SRC}/pyish.c"], "pyish", shared=False, args=["-ldl"])
    script = base / "run.sh"
    script.write_text(f'#!/bin/sh\nexec {pyish} {target} "$@"\n')
    script.chmod(0o755)
    needs = cc_build([f"{SRC}/needs_cublas.c"], "needs_cublas", shared=False,
                     args=[f"-L{nv}", "-l:libcublas.so.13"])
    return {"base": base, "target": target, "nv": nv, "rocm": base / "root/opt/rocm", "root": base / "root",
            "script": script,
            "needs_cublas": needs}


def _release(cc_build: Callable[..., Path], world: dict[str, Path], out: Path, *, soname: bool,
             zluda_ld: bool) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    rocm_lib = world["rocm"] / "lib"
    for file_name, (macro, links) in SHIMS.items():
        args = [f"-D{macro}", "-DUSE_HIP", f'-DWHO="zluda {file_name}"', "-Wl,--no-as-needed",
                f"-L{rocm_lib}", "-l:libamdhip64.so", "-ldl"]
        if soname:
            args.append(f"-Wl,-soname,{links[0]}")
        shutil.copy2(cc_build([f"{SRC}/lib.c"], file_name, args=args), out / file_name)
        for link in links:
            os.symlink(file_name, out / link)
    if zluda_ld:
        names = sorted(n for _m, links in SHIMS.values() for n in links)
        src = world["base"] / "zluda_ld.c"
        src.write_text(zluda_ld_source(names))
        shutil.copy2(cc_build([src], "libzluda_ld.so", args=["-ldl"]), out / "libzluda_ld.so")
        os.symlink("libzluda_ld.so", out / "zluda_ld")
    return out


def test_shims_have_the_rust_cdylib_shape(cc_build, world, tmp_path: Path) -> None:
    release = _release(cc_build, world, tmp_path / "rel", soname=False, zluda_ld=False)
    info = read_elf(release / "libcublas.so")
    assert info.soname is None and not info.version_defs and info.has_versym
    assert info.needed[0] == "libamdhip64.so"


@pytest.mark.parametrize("zluda_ld", [False, True], ids=["no-zluda_ld", "zluda_ld"])
@pytest.mark.parametrize("soname", [False, True], ids=["no-soname", "soname"])
@pytest.mark.parametrize("preload", [True, False], ids=["preloads-by-path", "no-preload"])
def test_real_shape_imports_cleanly_and_the_log_proves_it(
    cc_build, world, tmp_path: Path, capfd, soname: bool, zluda_ld: bool, preload: bool,
) -> None:
    release = _release(cc_build, world, tmp_path / "rel", soname=soname, zluda_ld=zluda_ld)
    cache = tmp_path / "cache"
    env = _clean_env(ZLUDA_RUNNER_ROOT=str(world["root"]))
    argv = [str(world["script"])] + ([] if preload else ["nopreload"])
    plan = plan_run(run_context(argv, Settings(zluda_dir=release, cache_dir=cache), env)).plan
    assert plan.verdict != "fatal", [b.problems for b in plan.fatal]
    # a script: not inspected; every library is assumed needed, and the plan says so
    assert {b.requested_by for b in plan.bindings} == {("(assumed)",)}, plan.bindings
    assert [w for w in plan.warnings if w.startswith(ASSUMED_PREFIX)], plan.warnings
    assert plan.library_path == (str(world["rocm"] / "lib"),)  # libamdhip64.so found in the host's /opt/rocm
    if zluda_ld and soname:
        assert plan.audit_library == str(release / "zluda_ld"), plan.audit_why
    else:
        assert plan.audit_library == "ours", plan.audit_why
        if zluda_ld:
            assert "no SONAME" in (plan.audit_why or "") and "needed != NULL" in (plan.audit_why or "")

    result = verify_bindings(argv, launch_env(plan, cache, env), expected_bindings(plan), timeout=60)
    out = capfd.readouterr().out
    assert result.exit_code == 0 and out.rstrip().endswith("OK"), out
    assert not result.failed and not result.loader_errors
    states = {ev.name: result.state(ev) for ev in result.bindings}
    for name in PROVEN:
        assert states[name] == TAKEN, (name, states)
    # the code that ran is the release's, never NVIDIA's, and NVIDIA's math files were never mapped
    assert not any(f"served by nvidia {n}" in out for n in NV_NAMES)  # (NVIDIA's cuSOLVER stays, by design)
    assert out.count("served by zluda libcublas.so") >= 2  # from libtorch_cuda and from libcusolver
    assert not any(f"nvidia/cu13/lib/{n}" in line for n in NV_NAMES for line in out.splitlines()
                   if line.startswith("  loaded:"))


def test_zluda_run_refuses_without_rocm_before_starting(cc_build, world, tmp_path: Path) -> None:
    release = _release(cc_build, world, tmp_path / "rel", soname=False, zluda_ld=True)
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "cache"), "--zluda-dir",
         str(release), "--", str(world["script"])],
        env=_clean_env(), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 3, proc.stderr
    assert "libamdhip64.so" in proc.stderr and "hip-runtime-amd" in proc.stderr
    assert "(a) preload" not in proc.stdout  # the workload never started


def test_versioned_only_rocm_is_named(cc_build, world, tmp_path: Path) -> None:
    release = _release(cc_build, world, tmp_path / "rel", soname=False, zluda_ld=False)
    only = tmp_path / "root/opt/distro/lib"  # on LD_LIBRARY_PATH, in the host's fake tree
    only.mkdir(parents=True)
    shutil.copy2(world["rocm"] / "lib/libamdhip64.so", only / "libamdhip64.so.6")
    env = _clean_env(LD_LIBRARY_PATH="/opt/distro/lib", ZLUDA_RUNNER_ROOT=str(tmp_path / "root"))
    settings = Settings(zluda_dir=release, cache_dir=tmp_path / "c")
    plan = plan_run(run_context([str(world["script"])], settings, env)).plan
    problems = list(dict.fromkeys(p for b in plan.fatal for p in b.problems))
    assert problems and all(str(only / "libamdhip64.so.6") in p for p in problems), problems
    assert_golden("launch-versioned-only-rocm", "\n".join(problems) + "\n", tmp=tmp_path)  # the fix


def test_upstream_zluda_ld_aborts_and_verify_load_says_so(cc_build, world, tmp_path: Path, capfd) -> None:
    """What the release's path-answering zluda_ld does with a no-SONAME release and path preloads:
    ld.so aborts; --verify-load reports the loader's words, proves nothing, and fails (exit 3)."""
    release = _release(cc_build, world, tmp_path / "rel", soname=False, zluda_ld=True)
    env = _clean_env(LD_AUDIT=str(release / "zluda_ld"), LD_LIBRARY_PATH=str(world["rocm"] / "lib"))
    expected = {n: release / n for n in PROVEN}
    result = verify_bindings([str(world["script"])], env, expected, timeout=60)
    capfd.readouterr()
    assert result.exit_code == 127 and result.failed and result.command_exit_code() == 3
    assert any("needed != NULL" in line for line in result.loader_errors)
    assert TAKEN not in {result.state(ev) for ev in result.bindings}
    assert UNPROVEN in {result.state(ev) for ev in result.bindings}


def test_model_predicts_the_path_answer_abort(cc_build, world, tmp_path: Path) -> None:
    """Full-path preload + a path-answering audit, shim without SONAME: the real ld.so aborts
    (dl-version.c needed != NULL) and so does the model; our bare-answer mode does not."""
    release = _release(cc_build, world, tmp_path / "rel", soname=False, zluda_ld=True)
    exe = world["needs_cublas"]
    shim = str(release / "libcublas.so.13")
    env = _clean_env(LD_PRELOAD=shim, LD_AUDIT=str(release / "zluda_ld"),
                     LD_LIBRARY_PATH=f"{world['nv']}:{world['rocm'] / 'lib'}")
    real = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=30, check=False)
    assert real.returncode == 127 and "needed != NULL" in real.stderr
    loader_env = LoaderEnv.from_host(env)
    loader_env.redirect, loader_env.redirect_mode = {"libcublas.so.13": shim}, AUDIT_PATH
    model = LoaderModel(loader_env).load(exe)
    assert any("needed != NULL" in e for e in model.errors), model.errors
    # without the audit the same preload by path leaves libcublas.so.13 to the NVIDIA file: no abort
    plain = LoaderEnv.from_host({**env, "LD_AUDIT": ""})
    assert LoaderModel(plain).load(exe).ok


def test_shell_script_with_relative_zluda_dir_gets_absolute_paths(cc_build, world, tmp_path: Path) -> None:
    """Issue 11 items 7 and 10: a shell-script workload is launched with the full set-up, and every
    path in its loader environment is absolute although --zluda-dir is relative (the script changes
    folder before it reads them)."""
    _release(cc_build, world, tmp_path / "rel", soname=False, zluda_ld=False)
    script = tmp_path / "show.sh"
    script.write_text('#!/bin/sh\ncd /\necho "AUDIT=$LD_AUDIT"\necho "LLP=$LD_LIBRARY_PATH"\n'
                      'echo "MAP=$ZLUDA_RUNNER_REDIRECT_MAP"\n')
    script.chmod(0o755)
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--cache-dir", "cache", "--zluda-dir", "rel", "--",
         str(script)],
        cwd=tmp_path, env=_clean_env(ZLUDA_RUNNER_ROOT=str(world["root"]),
                                     PYTHONPATH=os.pathsep.join(sys.path)),
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    values = dict(line.split("=", 1) for line in proc.stdout.splitlines())
    paths = [*values["AUDIT"].split(":"), *values["LLP"].split(":"), values["MAP"]]
    assert paths and all(os.path.isabs(p) and os.path.exists(p) for p in paths), values
    mapped = Path(values["MAP"]).read_text()
    assert all(os.path.isabs(line.split("\t")[1]) for line in mapped.splitlines())
    assert "libcublas.so.13" in mapped  # not inspected: every name of the release is set up


def test_refusal_names_each_missing_rocm_library_once_with_every_shim_that_needs_it() -> None:
    """Six shims missing libamdhip64.so read as one line naming all six, not six paragraphs."""
    from zluda_runner.core.errors import FatalPlanError
    from zluda_runner.launch.prepare import refuse_if_fatal
    from zluda_runner.plan.model import Binding, ShimPlan

    def binding(need: str, shim: str, *missing: str) -> Binding:
        problems = [f"{shim} needs {m}, which is not found ..." for m in missing]
        return Binding(need=need, family="x", action="replace", shim=f"/r/{shim}", load_name=need,
                       mechanism="ld_audit", verdict="fatal", reasons=problems, problems=problems)

    plan = ShimPlan(bindings=[binding("libcuda.so.1", "libnvcuda.so", "libamdhip64.so"),
                              binding("libcublas.so.13", "libcublas.so", "librocblas.so", "libamdhip64.so")])
    with pytest.raises(FatalPlanError) as info:
        refuse_if_fatal(plan, force=False)
    lines = info.value.message.splitlines()[1:]
    assert lines == ["  libnvcuda.so, libcublas.so: needs libamdhip64.so, which is not found ...",
                     "  libcublas.so: needs librocblas.so, which is not found ..."]
    assert info.value.exit_code == 3
