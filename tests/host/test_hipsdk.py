"""Windows HIP SDK conflicts on fake hosts (a tree under tmp + an environment; never this machine):
several SDKs, a HIP runtime mix read from real PE import tables (mingw builds of
tests/fixtures/windows/hip_sdk.c), an SDK without rocBLAS kernels for the GPU; in the doctor (ok /
warn / fail, exit 3 under strict, "not applicable" on Linux) and as plan warnings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from zluda_runner.core.exitcodes import CHECK_FAILED, OK
from zluda_runner.core.settings import Settings
from zluda_runner.doctor import DoctorOptions, Status, run_doctor
from zluda_runner.host import hipsdk
from zluda_runner.host.hip import HipDevice, HipInfo

ROCM = "Program Files/AMD/ROCm"
WIN_ROCM = r"C:\Program Files\AMD\ROCm"


def _write(root: Path, rel: str, data: bytes = b"") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _sdk(root: Path, version: str, *, kernels: tuple[str, ...] = ()) -> str:
    """A HIP SDK folder as the installer lays it out: bin\\amdhip64_N.dll, rocblas\\library per gfx."""
    major = version.split(".")[0]
    _write(root, f"{ROCM}/{version}/bin/amdhip64_{major}.dll")
    for gfx in kernels:
        _write(root, f"{ROCM}/{version}/bin/rocblas/library/TensileLibrary_lazy_{gfx}.dat")
        _write(root, f"{ROCM}/{version}/bin/rocblas/library/TensileLibrary_Type_HH_Contraction_{gfx}.co")
    _write(root, f"{ROCM}/{version}/bin/rocblas/library/TensileManifest.txt")
    return f"{WIN_ROCM}\\{version}\\"


@pytest.fixture(scope="module")
def pe(mingw_build) -> dict[str, Path]:
    """Real PE files: HIP runtimes 6 and 7, a rocBLAS for each, ZLUDA cuBLAS builds importing each."""
    hip6 = mingw_build(["windows/hip_sdk.c"], "amdhip64_6.dll", args=["-DAMDHIP"])
    hip7 = mingw_build(["windows/hip_sdk.c"], "amdhip64_7.dll", args=["-DAMDHIP"])
    rocblas6 = mingw_build(["windows/hip_sdk.c", hip6], "rocblas.dll", args=["-DROCBLAS"])
    rocblas7 = mingw_build(["windows/hip_sdk.c", hip7], "rocblas_hip7.dll", args=["-DROCBLAS"])
    zluda6 = mingw_build(["windows/hip_sdk.c", hip6, rocblas6], "cublas.dll", args=["-DZLUDA_CUBLAS"])
    zluda7 = mingw_build(["windows/hip_sdk.c", hip7, rocblas7], "cublas_hip7.dll", args=["-DZLUDA_CUBLAS"])
    return {"hip6": hip6, "hip7": hip7, "rocblas6": rocblas6, "rocblas7": rocblas7,
            "zluda6": zluda6, "zluda7": zluda7}


def _put(src: Path, root: Path, rel: str) -> Path:
    dest = root / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def _release(tmp_path: Path, dll: Path) -> Path:
    folder = tmp_path / "zluda"
    _put(dll, folder, "cublas64_12.dll")
    return folder


# --------------------------------------------------------------------------- several SDKs


def test_one_sdk_named_twice_is_no_conflict(tmp_path: Path) -> None:
    env = {"HIP_PATH": _sdk(tmp_path, "6.4"), "HIP_PATH_64": f"{WIN_ROCM}\\6.4\\"}
    sdks = hipsdk.find_sdks(tmp_path, env)
    assert [(s.version, s.variables, s.used) for s in sdks] == [("6.4", ("HIP_PATH", "HIP_PATH_64"), True)]
    assert hipsdk.sdk_conflicts(sdks, env) == ()


def test_several_sdks_say_which_one_the_launch_uses_and_which_disagree(tmp_path: Path) -> None:
    env = {"HIP_PATH": _sdk(tmp_path, "6.4"), "HIP_PATH_64": f"{WIN_ROCM}\\6.4\\",
           "HIP_PATH_62": _sdk(tmp_path, "6.2"), "HIP_PATH_70": _sdk(tmp_path, "7.0")}
    sdks = hipsdk.find_sdks(tmp_path, env)
    assert hipsdk.used_sdk(sdks).version == "6.4"  # HIP_PATH wins, as for every command
    [several] = [c for c in hipsdk.sdk_conflicts(sdks, env) if c.kind == "several-sdks"]
    assert several.severity == "warn"
    for sdk in sdks:  # each one by its folder and the variables naming it; the one the launch uses first
        assert sdk.path in several.message and all(v in several.message for v in sdk.variables)
    assert several.message.index("6.4") < several.message.index("6.2")
    assert several.fix.index("6.4") < several.fix.index("7.0") < several.fix.index("6.2")  # keep the used one


def test_a_variable_naming_another_version_or_a_missing_folder(tmp_path: Path) -> None:
    env = {"HIP_PATH": _sdk(tmp_path, "6.4"), "HIP_PATH_62": f"{WIN_ROCM}\\6.4\\",
           "HIP_PATH_57": f"{WIN_ROCM}\\5.7\\"}
    conflicts = {c.kind: c for c in hipsdk.sdk_conflicts(hipsdk.find_sdks(tmp_path, env), env)}
    assert set(conflicts) == {"variable-mismatch", "missing-folder"}
    mismatch, missing = conflicts["variable-mismatch"], conflicts["missing-folder"]
    assert all(d in mismatch.message for d in ("HIP_PATH_62", "6.2", "6.4"))  # the variable, both versions
    assert all(d in mismatch.fix for d in ("HIP_PATH_62", "6.2"))
    assert all(d in missing.message for d in ("HIP_PATH_57", f"{WIN_ROCM}\\5.7"))
    assert "HIP_PATH_57" in missing.fix


def test_version_from_hip_version_h_when_the_folder_name_has_none(tmp_path: Path) -> None:
    _write(tmp_path, "hip/include/hip/hip_version.h",
           b"#define HIP_VERSION_MAJOR 6\n#define HIP_VERSION_MINOR 4\n")
    env = {"HIP_PATH": "D:\\hip\\", "HIP_PATH_62": "D:\\hip"}
    [sdk] = hipsdk.find_sdks(tmp_path, env)
    assert (sdk.version, sdk.version_source) == ("6.4", "D:\\hip\\include\\hip\\hip_version.h")
    [mismatch] = hipsdk.sdk_conflicts([sdk], env)
    assert mismatch.kind == "variable-mismatch" and "HIP_PATH_62" in mismatch.message


def test_path_taking_hip_from_another_sdk(tmp_path: Path) -> None:
    env = {"HIP_PATH": _sdk(tmp_path, "6.4"), "HIP_PATH_62": _sdk(tmp_path, "6.2"),
           "PATH": f"C:\\Windows\\System32;{WIN_ROCM}\\6.2\\bin;{WIN_ROCM}\\6.4\\bin\\"}
    def order() -> list[hipsdk.Conflict]:
        found = hipsdk.sdk_conflicts(hipsdk.find_sdks(tmp_path, env), env)
        return [c for c in found if c.kind == "path-order"]

    [first] = order()
    old, new = f"{WIN_ROCM}\\6.2\\bin", f"{WIN_ROCM}\\6.4\\bin"
    assert first.message.index(old) < first.message.index(new)  # PATH's order, as PATH has it
    assert first.fix == f"Put {new} before {old} on PATH (or take {old} off it)."
    env["PATH"] = f"{WIN_ROCM}\\6.4\\bin;{WIN_ROCM}\\6.2\\bin"
    assert order() == []


# --------------------------------------------------------------------------- the HIP runtime mix


def test_release_for_amdhip64_7_on_a_hip_6_4_sdk_is_a_crash(tmp_path: Path, pe: dict[str, Path]) -> None:
    env = {"HIP_PATH": _sdk(tmp_path, "6.4"), "SystemRoot": "C:\\Windows"}
    _put(pe["rocblas6"], tmp_path, f"{ROCM}/6.4/bin/rocblas.dll")
    _put(pe["rocblas6"], tmp_path, f"{ROCM}/6.4/bin/MIOpen.dll")
    [sdk] = hipsdk.find_sdks(tmp_path, env)
    libraries = hipsdk.math_libraries(tmp_path, sdk)
    assert [(lib.name, lib.hip_dlls) for lib in libraries] == [
        ("MIOpen.dll", ("amdhip64_6.dll",)), ("rocblas.dll", ("amdhip64_6.dll",))]
    release = hipsdk.release_hip_dlls([pe["zluda7"]])
    assert release == ("amdhip64_7.dll",)
    # no amdhip64_7.dll anywhere: only a release that falls back to HIP 6 (v6 does) runs
    soft = hipsdk.runtime_mix(tmp_path, env, sdk, release)
    assert soft is not None and (soft.kind, soft.severity) == ("hip-runtime-mix", "warn")
    assert "amdhip64_7.dll" in soft.message
    _put(pe["hip7"], tmp_path, "Windows/System32/amdhip64_7.dll")  # the driver's HIP 7 runtime
    mix = hipsdk.runtime_mix(tmp_path, env, sdk, release)
    assert mix is not None and mix.kind == "hip-runtime-mix" and mix.severity == "fail"
    assert all(d in mix.message for d in ("amdhip64_7.dll", "6.4"))  # the release's runtime, the SDK's
    assert "MIOpen.dll (amdhip64_6.dll), rocblas.dll (amdhip64_6.dll)" in mix.message
    assert "C:\\Windows\\System32\\amdhip64_7.dll" in mix.message and "vosen/ZLUDA#579" in mix.message
    assert all(d in mix.fix for d in ("7.x", "amdhip64_6.dll"))  # either way out: HIP SDK 7, a HIP 6 release
    # a release built for HIP 6 on the same SDK: one runtime
    assert hipsdk.runtime_mix(tmp_path, env, sdk, hipsdk.release_hip_dlls([pe["zluda6"]])) is None


def test_release_and_sdk_both_on_hip_7(tmp_path: Path, pe: dict[str, Path]) -> None:
    env = {"HIP_PATH": _sdk(tmp_path, "7.1")}
    _put(pe["rocblas7"], tmp_path, f"{ROCM}/7.1/bin/rocblas.dll")
    [sdk] = hipsdk.find_sdks(tmp_path, env)
    assert hipsdk.runtime_mix(tmp_path, env, sdk, hipsdk.release_hip_dlls([pe["zluda7"]])) is None
    # one math library of HIP 6 copied in (a community rocBLAS for an older SDK): a mix again
    _put(pe["rocblas6"], tmp_path, f"{ROCM}/7.1/bin/hipblaslt.dll")
    mix = hipsdk.runtime_mix(tmp_path, env, sdk, hipsdk.release_hip_dlls([pe["zluda7"]]))
    assert mix is not None and "hipblaslt.dll (amdhip64_6.dll)" in mix.message
    assert "rocblas.dll" not in mix.message


# --------------------------------------------------------------------------- rocBLAS kernels


def test_rocblas_kernels_for_this_gpu(tmp_path: Path) -> None:
    env = {"HIP_PATH": _sdk(tmp_path, "6.4", kernels=("gfx1100",)), "HIP_PATH_62": _sdk(tmp_path, "6.2")}
    sdks = hipsdk.find_sdks(tmp_path, env)
    assert hipsdk.kernel_conflict(hipsdk.rocblas_kernels(tmp_path, sdks, "gfx1100"), "gfx1100") is None
    missing = hipsdk.kernel_conflict(hipsdk.rocblas_kernels(tmp_path, sdks, "gfx1201"), "gfx1201")
    assert missing is not None and missing.severity == "fail"
    assert (missing.kind, missing.severity) == ("rocblas-kernels", "fail")
    assert all(d in missing.message for d in ("gfx1201", f"{WIN_ROCM}\\6.4\\bin\\rocblas\\library"))
    assert "gfx1201" in missing.fix
    # gfx1030 must not match gfx10300-style names; another SDK with the kernels is named in the fix
    _write(tmp_path, f"{ROCM}/6.2/bin/rocblas/library/TensileLibrary_lazy_gfx1201.dat")
    other = hipsdk.kernel_conflict(hipsdk.rocblas_kernels(tmp_path, sdks, "gfx1201"), "gfx1201")
    assert other is not None and other.fix == (  # the SDK that has them, the variable and PATH to set
        f"HIP SDK 6.2 at {WIN_ROCM}\\6.2 (HIP_PATH_62) has them: set HIP_PATH to {WIN_ROCM}\\6.2 and put "
        f"{WIN_ROCM}\\6.2\\bin first on PATH, or copy its TensileLibrary*gfx1201* files into "
        f"{WIN_ROCM}\\6.4\\bin\\rocblas\\library.")


def test_plan_warnings_name_each_conflict_with_its_fix(tmp_path: Path, pe: dict[str, Path]) -> None:
    env = {"HIP_PATH": _sdk(tmp_path, "6.4"), "HIP_PATH_62": _sdk(tmp_path, "6.2")}
    _put(pe["rocblas6"], tmp_path, f"{ROCM}/6.4/bin/rocblas.dll")
    _put(pe["hip7"], tmp_path, "Windows/System32/amdhip64_7.dll")
    warnings = hipsdk.plan_warnings(tmp_path, env, [pe["zluda7"]], gfx="gfx1201")
    assert len(warnings) == 3 and all("(fix: " in w for w in warnings)
    assert "6.2" in warnings[0] and "amdhip64_7.dll" in warnings[1] and "gfx1201" in warnings[2]
    # 6.2 is still installed (Program Files\AMD\ROCm lists it) though no variable names it
    one = {"HIP_PATH": env["HIP_PATH"]}
    assert "6.2" in hipsdk.plan_warnings(tmp_path, one, [pe["zluda6"]])[0]
    shutil.rmtree(tmp_path / ROCM / "6.2")
    assert hipsdk.plan_warnings(tmp_path, one, [pe["zluda6"]]) == []


# --------------------------------------------------------------------------- the doctor


def _gpu(gfx: str) -> HipInfo:
    return HipInfo(library="amdhip64_6.dll", runtime_version=60443483, driver_version=60443483,
                   devices=[HipDevice(0, "AMD Radeon RX 9070 XT", gfx, gfx, 16 << 30)])


def _windows_doctor(root: Path, env: dict[str, str], *, strict: bool = False,
                    settings: Settings | None = None) -> object:
    return run_doctor(DoctorOptions(root=root, env=env, platform="win32", machine="AMD64",
                                    home=Path("/Users/u"), hip_query=lambda: _gpu("gfx1201"),
                                    strict=strict, settings=settings))


def test_doctor_names_each_conflict_and_strict_exits_3(tmp_path: Path, pe: dict[str, Path]) -> None:
    root = tmp_path / "root"
    env = {"HIP_PATH": _sdk(root, "6.4", kernels=("gfx1201",)), "HIP_PATH_64": f"{WIN_ROCM}\\6.4\\"}
    _put(pe["rocblas6"], root, f"{ROCM}/6.4/bin/rocblas.dll")
    settings = Settings(zluda_dir=_release(tmp_path, pe["zluda6"]), cache_dir=tmp_path / "cache")
    clean = _windows_doctor(root, env, strict=True, settings=settings)
    assert [clean.check(c).status for c in ("hip_sdks", "hip_runtime_mix", "sdk_rocblas")] == [Status.OK] * 3
    assert "amdhip64_6.dll" in clean.check("hip_runtime_mix").message

    env["HIP_PATH_62"] = _sdk(root, "6.2")
    _put(pe["hip7"], root, "Windows/System32/amdhip64_7.dll")
    settings = Settings(zluda_dir=_release(tmp_path / "v7", pe["zluda7"]), cache_dir=tmp_path / "cache")
    report = _windows_doctor(root, env, settings=settings)
    sdks, mix = report.check("hip_sdks"), report.check("hip_runtime_mix")
    assert sdks.status is Status.WARN and all(d in sdks.message for d in ("6.4", "6.2"))
    assert "6.2" in sdks.fix
    assert mix.status is Status.FAIL and "amdhip64_7.dll" in mix.message and "7.x" in mix.fix
    assert report.exit_code == CHECK_FAILED
    assert _windows_doctor(root, env, strict=True, settings=settings).exit_code == CHECK_FAILED

    shutil.rmtree(root / ROCM / "6.4" / "bin" / "rocblas")
    kernels = _windows_doctor(root, env, settings=settings).check("sdk_rocblas")
    assert kernels.status is Status.FAIL and "gfx1201" in kernels.message


def test_doctor_warning_alone_exits_3_only_under_strict(tmp_path: Path) -> None:
    env = {"HIP_PATH": _sdk(tmp_path, "6.4", kernels=("gfx1201",)), "HIP_PATH_62": f"{WIN_ROCM}\\6.4\\"}
    _write(tmp_path, f"{ROCM}/6.4/bin/hipblaslt/library/extop_gfx1201.co")  # every other check ok
    for dll in ("MIOpen.dll", "rocblas.dll", "hipblaslt.dll"):  # the kernels are read beside the library
        _write(tmp_path, f"{ROCM}/6.4/bin/{dll}")
    settings = Settings(zluda_dir=tmp_path / "no-release", cache_dir=tmp_path / "cache")
    loose = _windows_doctor(tmp_path, env, settings=settings)
    not_ok = [(c.id, c.status) for c in loose.checks if c.status is not Status.OK]
    assert not_ok == [("hip_sdks", Status.WARN)]
    assert "HIP_PATH_62" in loose.check("hip_sdks").message
    assert loose.exit_code == OK
    assert _windows_doctor(tmp_path, env, strict=True, settings=settings).exit_code == CHECK_FAILED


def test_doctor_on_linux_says_not_applicable(tmp_path: Path) -> None:
    report = run_doctor(DoctorOptions(root=tmp_path, env={"HIP_PATH_62": r"C:\x"}, platform="linux",
                                      machine="x86_64", home=Path("/home/u")))
    ids = ("hip_sdks", "hip_runtime_mix", "sdk_rocblas")
    assert [report.check(c).status for c in ids] == [Status.NOT_APPLICABLE] * 3
    assert all("linux" in report.check(c).message for c in ids)
    assert not [s for s in report.skipped if s.startswith(ids)]  # a status of its own, not a skip


# --------------------------------------------------------------------------- the plan


def test_a_windows_plan_warns_of_the_host_conflicts_read_fresh(mingw_build, pe: dict[str, Path],
                                                               tmp_path: Path) -> None:
    """A Windows program planned here (its PE read as the plan reads it) against a fake Windows host:
    the plan names each conflict with its fix; a cached plan reads the host again."""
    from zluda_runner.conduct.context import run_context
    from zluda_runner.conduct.plan import plan_run

    cudart = mingw_build(["plan/win_stub.c"], "cudart64_12.dll", args=["-DCUDART"])
    exe = tmp_path / "app" / "cuda_program.exe"
    exe.parent.mkdir()
    shutil.copy2(mingw_build(["windows/cuda_program.c", cudart], "cuda_program.exe", shared=False), exe)
    shutil.copy2(cudart, exe.parent / "cudart64_12.dll")
    release = tmp_path / "zluda"
    _put(mingw_build(["plan/win_stub.c"], "nvcuda.dll", args=["-DDRIVER"]), release, "nvcuda.dll")
    _put(pe["zluda7"], release, "cublas64_12.dll")  # the release's DLLs import amdhip64_7.dll
    root = tmp_path / "root"
    env = {"ZLUDA_RUNNER_ROOT": str(root), "HIP_PATH": _sdk(root, "6.4"), "HIP_PATH_62": _sdk(root, "6.2"),
           "SystemRoot": "C:\\Windows", "PATH": ""}
    _put(pe["rocblas6"], root, f"{ROCM}/6.4/bin/rocblas.dll")
    _put(pe["hip7"], root, "Windows/System32/amdhip64_7.dll")
    settings = Settings(zluda_dir=release, cache_dir=tmp_path / "cache")
    plan = plan_run(run_context([str(exe)], settings, env)).plan
    assert plan.os == "windows"
    conflicts = [w for w in plan.warnings if "(fix: " in w and "HIP" in w]
    assert len(conflicts) == 2, plan.warnings
    assert all(d in conflicts[0] for d in ("6.4", "6.2"))  # the SDKs, then the runtime mix
    assert all(d in conflicts[1] for d in ("amdhip64_7.dll", "rocblas.dll (amdhip64_6.dll)", "(fix: "))
    kept = json.loads((tmp_path / "cache" / "binfmt" / "hip-imports.json").read_text())["files"]
    assert len(kept) == 3  # rocblas.dll, nvcuda.dll, cublas64_12.dll: not read again by the next launch
    shutil.rmtree(root / ROCM / "6.2")  # uninstalled, the variable left behind: the cached plan sees it
    again = plan_run(run_context([str(exe)], settings, env)).plan
    fresh = [w for w in again.warnings if "(fix: " in w and "HIP" in w]
    assert [w.split(" ")[0] for w in fresh] == ["HIP_PATH_62", "the"], again.warnings
    assert f"{WIN_ROCM}\\6.2" in fresh[0]


def test_doctor_judges_a_release_not_downloaded_by_its_manifest_bounds(tmp_path: Path,
                                                                      pe: dict[str, Path]) -> None:
    """upstream v6 (HIP SDK 6 to 7: its nvcuda.dll delay-loads amdhip64_7.dll, else amdhip64_6.dll) on a
    HIP SDK 6.4 host whose driver ships amdhip64_7.dll: the mix users hit (vosen/ZLUDA#579)."""
    root = tmp_path / "root"
    env = {"HIP_PATH": _sdk(root, "6.4", kernels=("gfx1201",)), "SystemRoot": "C:\\Windows"}
    _put(pe["rocblas6"], root, f"{ROCM}/6.4/bin/rocblas.dll")
    settings = Settings(cache_dir=tmp_path / "cache")  # nothing downloaded
    soft = _windows_doctor(root, env, settings=settings).check("hip_runtime_mix")
    assert soft.status is Status.WARN and "amdhip64_7.dll" in soft.message
    source = soft.details["release_source"]
    assert soft.details["release_read"] == "manifest" and "upstream-v6" in source  # judged by its manifest
    assert soft.details["release_hip"] == ["amdhip64_7.dll"]  # the newest HIP major its bounds allow
    _put(pe["hip7"], root, "Windows/System32/amdhip64_7.dll")
    mix = _windows_doctor(root, env, settings=settings).check("hip_runtime_mix")
    assert mix.status is Status.FAIL and "amdhip64_7.dll" in mix.message
