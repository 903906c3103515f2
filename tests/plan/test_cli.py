"""The run/plan/restore/status commands end to end: exit codes, refusal, JSON, plan cache, bad input."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import zluda_runner.conduct.plan as prepare
import zluda_runner.conduct.resolve as resolve
from tests.golden import assert_golden
from zluda_runner.cli import main_group
from zluda_runner.commands import COMMAND_TABLE, load_module
from zluda_runner.conduct.context import run_context
from zluda_runner.core.errors import PlanError
from zluda_runner.core.settings import Settings
from zluda_runner.inspection.profile import TargetProfile
from zluda_runner.launch.windows import Placement, place
from zluda_runner.plan.build import make_plan
from zluda_runner.release.layout import ReleaseLayout, scan_release_dir

CUBLAS = "libcublas.so.13"


def _args(tmp_path: Path, release: Path, *rest: str) -> list[str]:
    return ["--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(release), *rest]


def test_command_not_found_exits_127_naming_it(standin_releases, zluda_run, tmp_path: Path) -> None:
    proc = zluda_run(_args(tmp_path, standin_releases["good"], "--", "no-such-command-zr", "x"))
    assert proc.returncode == 127
    assert "no-such-command-zr" in proc.stderr and "Traceback" not in proc.stderr


def test_exit_code_and_argv_pass_through(standin_releases, zluda_run, tmp_path: Path) -> None:
    release = standin_releases["good"]
    assert zluda_run(_args(tmp_path, release, "--", "sh", "-c", "exit 7")).returncode == 7
    script = 'printf "%s|" "$@"'
    echoed = zluda_run(_args(tmp_path, release, "--", "sh", "-c", script, "sh", "a b", "--force", ""))
    assert (echoed.returncode, echoed.stdout) == (0, "a b|--force||")
    # the plan's loader set-up reaches the child (and so its children)
    env = zluda_run(_args(tmp_path, release, "--", "sh", "-c", 'printf "%s" "$LD_LIBRARY_PATH"'))
    assert env.returncode == 0 and env.stdout.split(":")[0].startswith(str(tmp_path / "cache"))
    # no "--": an unknown first word is the command
    assert zluda_run(_args(tmp_path, release, "true")).returncode == 0


def test_fatal_verdict_refused_unless_forced(apps, standin_releases, zluda_run, tmp_path: Path) -> None:
    release = standin_releases["no_versions"]
    refused = zluda_run(["--json", *_args(tmp_path, release, "--", str(apps["runpath"]))])
    assert refused.returncode == 3  # a check failed (core/exitcodes.py)
    error = json.loads(refused.stdout)  # stdout is this object alone: the command never ran
    assert error["kind"] == "fatal-plan" and error["exit_code"] == 3 and CUBLAS in error["error"], error
    assert "DT_VERSYM" in error["error"] and "--force" in error["hint"], error  # what it lacks; the way past
    forced = zluda_run(_args(tmp_path, release, "--force", "--", str(apps["runpath"])))
    assert forced.returncode != 0 and "check_match" in forced.stderr  # it ran, and died as predicted


def test_plan_json_schema(apps, standin_releases, zluda_run, tmp_path: Path) -> None:
    release = standin_releases["missing_symbol"]
    proc = zluda_run(_args(tmp_path, release, "plan", "--json", "--", str(apps["rpath"]), "sgemm"))
    assert proc.returncode == 0, proc.stderr  # warn is not fatal
    data = json.loads(proc.stdout)
    assert data["schema"] == 1 and data["verdict"] == "warn"
    assert data["release"]["root"] == str(release)
    assert data["argv"] == [str(apps["rpath"]), "sgemm"]
    assert isinstance(data["env"], dict)
    for binding in data["bindings"]:
        assert {"need", "action", "shim", "load_name", "mechanism", "verdict", "reasons"} <= set(binding)
    cublas = next(b for b in data["bindings"] if b["need"] == CUBLAS)
    assert (cublas["action"], cublas["mechanism"], cublas["verdict"]) == ("replace", "ld_audit", "warn")
    assert cublas["load_name"] == CUBLAS and cublas["shim"] == str((release / CUBLAS).resolve())
    assert any("cublasSgemm_v2" in r for r in cublas["reasons"])
    assert data["redirect_map"][CUBLAS] == cublas["shim"]


def test_plan_fatal_exit_code_and_text(apps, standin_releases, zluda_run, tmp_path: Path) -> None:
    proc = zluda_run(_args(tmp_path, standin_releases["other_version"], "plan", "--", str(apps["none"])))
    assert proc.returncode == 3 and "FATAL" in proc.stdout, proc.stdout + proc.stderr
    proc = zluda_run(_args(tmp_path, standin_releases["other_version"], "plan", "--json", "--",
                           str(apps["none"])))
    assert proc.returncode == 3, proc.stderr
    data = json.loads(proc.stdout)
    cublas = next(b for b in data["bindings"] if b["need"] == CUBLAS)
    assert (data["verdict"], cublas["verdict"]) == ("fatal", "fatal")
    assert_golden("plan-faulty-shim-other_version", "\n".join(cublas["problems"]) + "\n")  # the base version


def test_plan_cache_hit_and_invalidation(apps, standin_releases, tmp_path: Path, monkeypatch) -> None:
    release = tmp_path / "release"
    shutil.copytree(standin_releases["good"], release, symlinks=True)
    settings = Settings(zluda_dir=release, cache_dir=tmp_path / "cache")
    calls: list[object] = []
    real_inspect = resolve.inspect_target

    def counting(choice, settings_, env):  # type: ignore[no-untyped-def]
        calls.append(choice)
        return real_inspect(choice, settings_, env)

    monkeypatch.setattr(resolve, "inspect_target", counting)
    argv = [str(apps["rpath"])]
    first = prepare.plan_run(run_context(argv, settings)).plan
    assert len(calls) == 1

    def refuse(*_a, **_k):  # type: ignore[no-untyped-def]
        raise AssertionError("inspected again although the plan is cached")

    monkeypatch.setattr(resolve, "inspect_target", refuse)
    second = prepare.plan_run(run_context([*argv, "other", "args"], settings)).plan
    assert second.to_dict() | {"argv": None} == first.to_dict() | {"argv": None}
    assert second.argv == (*argv, "other", "args")

    # A shim file changes: the cached plan is no longer valid.
    monkeypatch.setattr(resolve, "inspect_target", counting)
    shim = release / CUBLAS
    shim.write_bytes(shim.read_bytes())
    os.utime(shim, ns=(shim.stat().st_atime_ns, shim.stat().st_mtime_ns + 5_000_000_000))
    prepare.plan_run(run_context(argv, settings))
    assert len(calls) == 2


def test_unknown_layout_is_a_clear_error(zluda_run, tmp_path: Path) -> None:
    junk = tmp_path / "not-zluda"
    junk.mkdir()
    (junk / "README.txt").write_text("hello")
    (junk / "libfoo.so.1").write_bytes(b"\x7fELF not really")
    proc = zluda_run(["--json", "--cache-dir", str(tmp_path / "c"), "--zluda-dir", str(junk), "--", "true"])
    assert proc.returncode == 1
    error = json.loads(proc.stdout)
    assert error["kind"] == "plan" and str(junk) in error["error"] and error["hint"], error
    assert "Traceback" not in proc.stderr


def test_release_folder_one_level_down_and_ambiguous(standin_releases, tmp_path: Path) -> None:
    outer = tmp_path / "unpacked"
    outer.mkdir()
    shutil.copytree(standin_releases["good"], outer / "zluda", symlinks=True)
    layout = scan_release_dir(outer)
    assert layout.root == str(outer / "zluda")
    assert {s.family for s in layout.shims} == {"driver", "cublas"}
    shutil.copytree(standin_releases["good"], outer / "zluda-2", symlinks=True)
    with pytest.raises(PlanError) as info:
        scan_release_dir(outer)
    assert info.value.message.startswith(f"{outer} ") and "(zluda, zluda-2)" in info.value.message


@pytest.mark.parametrize(("build", "words"), [("rocm", "ROCm build"), ("cpu", "CPU-only build")])
def test_rocm_or_cpu_target_is_refused(build: str, words: str) -> None:
    with pytest.raises(PlanError, match=words) as info:
        make_plan(TargetProfile(build=build), ReleaseLayout(root="/nowhere", os="linux"))
    assert info.value.hint


def test_rocm_interpreter_cli_message(standin_releases, zluda_run, tmp_path: Path) -> None:
    """A Python whose torch is a ROCm build: the CLI explains, no traceback."""
    site = tmp_path / "site"
    (site / "torch" / "lib").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("")
    (site / "torch" / "version.py").write_text("__version__ = '2.5.0+rocm6.2'\ncuda = None\nhip = '6.2'\n")
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    proc = zluda_run(["--json", *_args(tmp_path, standin_releases["good"], "plan", "--python", str(python))])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    error = json.loads(proc.stdout)
    assert error["kind"] == "target" and "2.5.0+rocm6.2" in error["error"], error  # the build it found


@pytest.fixture
def placed_torch_lib(mingw_build, tmp_path: Path) -> tuple[Path, Path]:
    original = mingw_build(["launch/pe_dll.c"], "cublas64_12.dll", args=['-DDLL_TAG="nvidia cublas"'])
    shim = mingw_build(["launch/pe_dll.c"], "cublas.dll", args=['-DDLL_TAG="zluda cublas"'])
    torch_lib = tmp_path / "torch" / "lib"
    torch_lib.mkdir(parents=True)
    shutil.copyfile(original, torch_lib / "cublas64_12.dll")
    place(torch_lib, [Placement(shim, "cublas64_12.dll")])
    return torch_lib, original


def test_status_and_restore_cli(placed_torch_lib: tuple[Path, Path]) -> None:
    torch_lib, original = placed_torch_lib
    runner = CliRunner()
    ok = runner.invoke(main_group, ["status", "--torch-lib", str(torch_lib)])
    assert ok.exit_code == 0 and "state: placed" in ok.output
    st = runner.invoke(main_group, ["status", "--json", "--torch-lib", str(torch_lib)])
    assert json.loads(st.output)["drift"] == []
    # pip reinstalls torch: the placed DLL is replaced behind our back
    (torch_lib / "cublas64_12.dll").write_bytes(original.read_bytes() + b"reinstalled")
    drift = runner.invoke(main_group, ["status", "--torch-lib", str(torch_lib)])
    assert drift.exit_code == 3 and "cublas64_12.dll" in drift.output
    drifted = runner.invoke(main_group, ["status", "--json", "--torch-lib", str(torch_lib)])
    assert "cublas64_12.dll" in json.dumps(json.loads(drifted.output)["drift"])
    kept = runner.invoke(main_group, ["--json", "restore", "--torch-lib", str(torch_lib)])
    assert kept.exit_code == 0 and json.loads(kept.output)["kept"] == ["cublas64_12.dll"]
    assert (torch_lib / "cublas64_12.dll").read_bytes().endswith(b"reinstalled")  # left alone


def test_restore_cli_puts_back_the_original(placed_torch_lib: tuple[Path, Path]) -> None:
    torch_lib, original = placed_torch_lib
    runner = CliRunner()
    done = runner.invoke(main_group, ["--json", "restore", "--torch-lib", str(torch_lib)])
    result = json.loads(done.output)
    assert done.exit_code == 0 and (result["restored"], result["kept"], result["complete"]) == (
        ["cublas64_12.dll"], [], True), result
    assert (torch_lib / "cublas64_12.dll").read_bytes() == original.read_bytes()
    again = runner.invoke(main_group, ["--json", "restore", "--torch-lib", str(torch_lib)])
    error = json.loads(again.output)
    assert (again.exit_code, error["kind"]) == (1, "nothing-to-restore"), error
    assert str(torch_lib) in error["error"], error
    assert (torch_lib / "cublas64_12.dll").read_bytes() == original.read_bytes()


def test_command_table_matches_the_modules() -> None:
    """Commands load lazily from COMMAND_TABLE: every click command defined in any module of
    zluda_runner.commands is listed there under its own module, and every listed name answers --help
    (its one-line help is the table's: commands.command and commands.group make it from there)."""
    import pkgutil

    import click

    import zluda_runner.commands as commands_pkg

    defined: dict[str, str] = {}
    for info in pkgutil.iter_modules(commands_pkg.__path__):
        module = load_module(info.name)
        for obj in vars(module).values():
            exported = obj in getattr(module, "COMMANDS", [])
            if isinstance(obj, click.Command) and obj.name and exported:
                defined[obj.name] = info.name
    assert defined == {name: module for name, (module, _) in COMMAND_TABLE.items()}
    runner = CliRunner()
    for name in COMMAND_TABLE:
        result = runner.invoke(main_group, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert f" {name} [OPTIONS]" in result.output, (name, result.output)


def test_cached_run_imports_no_heavy_module(standin_releases, tmp_path: Path) -> None:
    """The cached launch path stays light (benchmarks/launch_overhead.py has the figures): what is
    loaded at the moment zluda-run replaces itself with the workload. A --zluda-dir launch on a host
    whose GPU and HIP are unknown reads no manifest, so the release stack is not imported either; nor
    are the results store's tables or the doctor's HIP query."""
    import subprocess

    args = _args(tmp_path, standin_releases["good"], "--", "true")
    code = (
        "import os, sys\nfrom zluda_runner.cli import main\n"
        "def fake_execve(path, argv, env):\n"
        "    heavy = [m for m in ('requests', 'elftools', 'pefile', 'zluda_runner.inspection.inspect',"
        " 'zluda_runner.probe', 'zluda_runner.doctor', 'zluda_runner.abtest', 'rich',"
        " 'zluda_runner.release.manifest', 'zluda_runner.release.selection', 'zluda_runner.results.schema',"
        " 'zluda_runner.host.hip', 'zluda_runner.host.compile_cache') if m in sys.modules]\n"
        "    print(heavy, flush=True)\n"
        "    os._exit(0)\n"
        "os.execve = fake_execve\n"
        f"main({args!r})\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)  # fills the plan cache
    second = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert second.stdout.strip() == "[]"


def test_a_plain_run_becomes_the_workload(standin_releases, tmp_path: Path) -> None:
    """Nothing follows a plain run, so zluda-run execs the workload: same pid, so killing zluda-run
    (even with SIGKILL) kills the workload, and signals and exit status are its own."""
    import subprocess

    args = _args(tmp_path, standin_releases["good"], "--", "sh", "-c", "echo $$; exit 7")
    proc = subprocess.Popen([sys.executable, "-m", "zluda_runner", *args], stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 7
    assert int(out.strip().splitlines()[-1]) == proc.pid


def test_verify_load_runs_are_recorded_unless_no_record(standin_releases, tmp_path: Path) -> None:
    """--verify-load keeps its evidence in the results store; --no-record keeps nothing."""
    import subprocess

    def zr(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "zluda_runner", *args], capture_output=True, text=True,
                              timeout=120)

    base = _args(tmp_path, standin_releases["good"])
    assert zr(*base, "--no-record", "--verify-load", "--", "sh", "-c", "true").returncode in (0, 3)
    listed = json.loads(zr("--cache-dir", str(tmp_path / "cache"), "results", "list", "--json").stdout)
    assert listed["runs"] == []
    assert zr(*base, "--verify-load", "--", "sh", "-c", "true").returncode in (0, 3)
    listed = json.loads(zr("--cache-dir", str(tmp_path / "cache"), "results", "list", "--json").stdout)
    assert [r["kind"] for r in listed["runs"]] == ["verify-load"]
