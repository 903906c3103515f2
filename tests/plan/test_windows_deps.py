"""The dependency walk of a Windows plan: each placed ZLUDA DLL's imports, resolved in the folders
Windows searches for this launch (torch's DLL loop and its PATH retry, our preload), from host facts
given as input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.golden import assert_golden
from zluda_runner.plan.model import Binding, Mechanism, PlanTarget, ShimPlan
from zluda_runner.plan.windows_deps import WindowsHost, add_dependency_walk

IMPORTS = {
    "cublas.dll": ["KERNEL32.dll", "api-ms-win-crt-runtime-l1-1-0.dll", "amdhip64_6.dll", "rocblas.dll"],
    "rocblas.dll": ["KERNEL32.dll", "amdhip64_6.dll", "msvcrt.dll"],
    "hipblas.dll": ["rocblas.dll"],
    "cusparse.dll": ["hipblas.dll"],
}


def imports_of(path: str) -> list[str]:
    return IMPORTS.get(Path(path).name.lower(), [])


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A Windows-shaped machine: python + torch, a fork release, the HIP SDK's bin, a Windows folder."""
    py = tmp_path / "py"
    lib = py / "Lib" / "site-packages" / "torch" / "lib"
    lib.mkdir(parents=True)
    (py / "python.exe").write_bytes(b"MZ")
    release = tmp_path / "ZLUDA"
    release.mkdir()
    for name in ("cublas.dll", "cusparse.dll", "nvcuda.dll"):
        (release / name).write_bytes(b"MZ")
    hip = tmp_path / "AMD" / "ROCm" / "6.2"
    (hip / "bin").mkdir(parents=True)
    for name in ("amdhip64_6.dll", "rocblas.dll", "hipblas.dll"):
        (hip / "bin" / name).write_bytes(b"MZ")
    windows = tmp_path / "Windows"
    (windows / "System32").mkdir(parents=True)
    (windows / "System32" / "msvcrt.dll").write_bytes(b"MZ")
    return {"py": py, "lib": lib, "release": release, "hip": hip, "windows": windows}


def _plan(tree: dict[str, Path], shim: str = "cublas.dll", need: str = "cublas64_11.dll",
          mechanism: Mechanism = "dll_placement") -> ShimPlan:
    b = Binding(need=need, family="cublas", action="replace", shim=str(tree["release"] / shim),
                load_name=need, mechanism=mechanism, verdict="ok")
    return ShimPlan(target=PlanTarget(python=str(tree["py"] / "python.exe")), os="windows", bindings=(b,),
                    path_prepend=(str(tree["release"]),))


def _golden(name: str, b: Binding, tree: dict[str, Path]) -> None:
    """The binding's problems and reasons, whole, as the plan shows them."""
    text = "".join(f"problem: {p}\n" for p in b.problems) + "".join(f"reason: {r}\n" for r in b.reasons)
    assert_golden(name, text, tmp=tree["windows"].parent)


def _walk(plan: ShimPlan, tree: dict[str, Path], env: dict[str, str], *, fallback: bool = True) -> Binding:
    walked = add_dependency_walk(plan, env, torch_lib=str(tree["lib"]), loop_fallback=fallback,
                                 app_dir=str(tree["py"]), imports_of=imports_of)
    return walked.bindings[0]


def test_a_hip_dll_off_path_is_fatal_and_named_with_its_folder_and_the_fix(tree: dict[str, Path]) -> None:
    env = {"SystemRoot": str(tree["windows"]), "PATH": str(tree["windows"] / "System32"),
           "HIP_PATH": str(tree["hip"]) + os.sep}
    b = _walk(_plan(tree), tree, env)
    assert b.verdict == "fatal"
    rocblas = next(p for p in b.problems if "needs rocblas.dll" in p)
    assert rocblas.startswith("cublas64_11.dll needs rocblas.dll, which is in none of the folders")
    assert f"it is in {tree['hip'] / 'bin'} (HIP_PATH\\bin), which is not on PATH: add that folder to PATH" \
        in rocblas
    assert [p.split(",")[0] for p in b.problems] == ["cublas64_11.dll needs amdhip64_6.dll",
                                                     "cublas64_11.dll needs rocblas.dll"]
    searched = next(r for r in b.reasons if r.startswith("searched: "))
    assert str(tree["lib"]) in searched and str(tree["release"]) in searched  # the loop's folders, then PATH


def test_the_fix_applied_the_retry_on_path_finds_them(tree: dict[str, Path]) -> None:
    env = {"SystemRoot": str(tree["windows"]), "PATH": str(tree["hip"] / "bin"), "HIP_PATH": str(tree["hip"])}
    b = _walk(_plan(tree), tree, env)
    assert b.verdict == "ok" and not b.problems
    _golden("windows_deps_retry_on_path", b, tree)  # the first load's error 126, then the retry's finds
    found = "rocblas.dll from " + str(tree["hip"] / "bin")
    assert any(r.startswith("its dependencies resolve") and found in r for r in b.reasons)


def test_without_the_retry_path_is_no_fix(tree: dict[str, Path]) -> None:
    """A torch whose loop does not retry with PATH: the HIP folder on PATH does not help."""
    env = {"SystemRoot": str(tree["windows"]), "PATH": str(tree["hip"] / "bin"), "HIP_PATH": str(tree["hip"])}
    b = _walk(_plan(tree), tree, env, fallback=False)
    assert b.verdict == "fatal"
    _golden("windows_deps_no_retry", b, tree)


def test_system32_and_the_torch_folder_serve_dependencies(tree: dict[str, Path]) -> None:
    """The AMD driver puts amdhip64_6.dll in System32; a rocblas.dll in torch/lib is found there."""
    (tree["windows"] / "System32" / "amdhip64_6.dll").write_bytes(b"MZ")
    (tree["lib"] / "rocblas.dll").write_bytes(b"MZ")
    b = _walk(_plan(tree), tree, {"SystemRoot": str(tree["windows"])})
    assert b.verdict == "ok" and not b.problems
    _golden("windows_deps_system32_and_torch", b, tree)  # rocblas.dll from torch/lib


def test_a_dependency_of_a_dependency_is_named_with_who_imports_it(tree: dict[str, Path]) -> None:
    (tree["lib"] / "hipblas.dll").write_bytes(b"MZ")
    (tree["lib"] / "amdhip64_6.dll").write_bytes(b"MZ")
    b = _walk(_plan(tree, "cusparse.dll", "cusparse64_11.dll"), tree, {"SystemRoot": str(tree["windows"])})
    assert b.verdict == "fatal"
    assert [p.split(",")[0] for p in b.problems] == [
        "cusparse64_11.dll needs rocblas.dll (imported by hipblas.dll)"]
    _golden("windows_deps_of_a_dependency", b, tree)


def test_without_system32_a_missing_dependency_is_a_warning(tree: dict[str, Path]) -> None:
    """Modelling a Windows tree from another OS: System32 may hold what is found nowhere else."""
    b = _walk(_plan(tree), tree, {})
    assert b.verdict == "warn"
    _golden("windows_deps_without_system32", b, tree)


def test_the_preload_searches_the_release_folder_and_path(tree: dict[str, Path]) -> None:
    for name in ("amdhip64_6.dll", "rocblas.dll"):
        (tree["release"] / name).write_bytes(b"MZ")
    b = _walk(_plan(tree, mechanism="preload"), tree, {"SystemRoot": str(tree["windows"])})
    assert b.verdict == "ok"
    assert any(r.startswith("its dependencies resolve for our preload") for r in b.reasons)


def test_host_facts_from_the_environment_given(tmp_path: Path) -> None:
    (tmp_path / "System32").mkdir()
    env = {"systemroot": str(tmp_path), "Path": os.pathsep.join(["b", "", "a", "b"]),
           "HIP_PATH_57": "C:\\old\\", "HIP_PATH": "C:\\new\\", "HIP_PATH_62": "C:\\62"}
    host = WindowsHost.from_env(env, ["first"])
    assert host.path == ("first", "b", "a")
    assert host.system32 == str(tmp_path / "System32")
    assert [v for v, _ in host.hip_dirs] == ["HIP_PATH", "HIP_PATH_62", "HIP_PATH_57"]
    assert WindowsHost.from_env({"SystemRoot": str(tmp_path / "nowhere")}).system32 is None
