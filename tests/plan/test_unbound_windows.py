"""Issue 29 on Windows: a ZLUDA DLL whose HIP SDK dependency (MIOpen.dll, rocsparse.dll ...) is in none of
the folders Windows searches is not placed and not preloaded (NVIDIA's DLL in torch/lib stays), unless it
is the driver or cuBLAS, which stay fatal. Host facts (System32, PATH, HIP_PATH) are a tree the test makes."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.plan.model import (
    Binding,
    Mechanism,
    PlanTarget,
    ShimPlan,
    StartupHook,
    WindowsPlacement,
)
from zluda_runner.plan.windows_deps import add_dependency_walk

IMPORTS = {
    "nvcuda.dll": ["KERNEL32.dll", "amdhip64_6.dll"],
    "cublas.dll": ["amdhip64_6.dll", "rocblas.dll"],
    "cudnn.dll": ["amdhip64_6.dll", "MIOpen.dll"],
    "nvml.dll": ["rocm_smi64.dll"],
}
# the DLL, the name it is loaded as, its family, how
BINDINGS: list[tuple[str, str, str, Mechanism]] = [
    ("nvcuda.dll", "nvcuda.dll", "driver", "dll_placement"),
    ("cublas.dll", "cublas64_12.dll", "cublas", "dll_placement"),
    ("cudnn.dll", "cudnn64_9.dll", "cudnn", "dll_placement"),
    ("nvml.dll", "nvml.dll", "nvml", "preload"),
]


def _imports_of(path: str) -> list[str]:
    return IMPORTS.get(Path(path).name.lower(), [])


def _walked(tmp_path: Path, hip_has: tuple[str, ...]) -> ShimPlan:
    py = tmp_path / "py"
    lib = py / "Lib" / "site-packages" / "torch" / "lib"
    lib.mkdir(parents=True)
    release, hip, windows = tmp_path / "ZLUDA", tmp_path / "AMD" / "ROCm" / "6.2", tmp_path / "Windows"
    system32 = windows / "System32"
    for folder, names in ((release, IMPORTS), (hip / "bin", hip_has), (system32, ["kernel32.dll"])):
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            (folder / name).write_bytes(b"MZ")
    bindings = tuple(Binding(need=need, family=family, action="replace", shim=str(release / dll),
                             load_name=need, mechanism=mech, verdict="ok",
                             reasons=(f"the release ships it as {dll}",))
                     for dll, need, family, mech in BINDINGS)
    placed = tuple(WindowsPlacement(str(release / dll), need) for dll, need, _f, mech in BINDINGS
                   if mech == "dll_placement")
    hook = StartupHook("sitecustomize", preload=(str(lib / "nvcuda.dll"), str(release / "nvml.dll")))
    plan = ShimPlan(target=PlanTarget(python=str(py / "python.exe")), os="windows", bindings=bindings,
                    placements=placed, startup_hook=hook, path_prepend=(str(release),))
    env = {"SystemRoot": str(windows), "PATH": str(hip / "bin"), "HIP_PATH": str(hip)}
    return add_dependency_walk(plan, env, torch_lib=str(lib), loop_fallback=True, app_dir=str(py),
                               imports_of=_imports_of)


def test_a_dll_without_its_hip_dependency_is_not_placed_nor_preloaded(tmp_path: Path) -> None:
    plan = _walked(tmp_path, ("amdhip64_6.dll", "rocblas.dll"))  # no MIOpen.dll, no rocm_smi64.dll
    by_need = {b.need: b for b in plan.bindings}
    assert plan.verdict == "warn"
    for need, missing in (("cudnn64_9.dll", "MIOpen.dll"), ("nvml.dll", "rocm_smi64.dll")):
        b = by_need[need]
        assert (b.action, b.verdict, b.mechanism) == ("unbound", "warn", "none")
        assert b.problems[0].startswith(f"{need} needs {missing},") and missing in b.problems[-1]
    assert [p.dest_name for p in plan.placements] == ["nvcuda.dll", "cublas64_12.dll"]  # NVIDIA's cuDNN stays
    assert plan.startup_hook is not None
    assert [Path(p).name for p in plan.startup_hook.preload] == ["nvcuda.dll"]
    assert by_need["nvcuda.dll"].action == by_need["cublas64_12.dll"].action == "replace"


def test_cublas_without_rocblas_stays_fatal(tmp_path: Path) -> None:
    plan = _walked(tmp_path, ("amdhip64_6.dll", "MIOpen.dll", "rocm_smi64.dll"))
    assert [(b.need, b.action) for b in plan.fatal] == [("cublas64_12.dll", "replace")]
    assert not [b for b in plan.bindings if b.action == "unbound"]
    assert len(plan.placements) == 3
