"""A plain Windows program is inspected as an ELF one is, and a Windows plan speaks of what Windows does
(DLL placement, preload, injector, LoadLibrary), never of Linux's loader (LD_AUDIT, LD_PRELOAD, dlopen)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

from tests.golden import assert_golden
from zluda_runner.conduct.resolve import assumed_target, choose_target, inspect_target
from zluda_runner.core.settings import Settings
from zluda_runner.plan.build import make_plan
from zluda_runner.release.layout import scan_release_dir
from zluda_runner.report.plan_view import plan_lines

LINUX_WORDS = ("LD_AUDIT", "LD_PRELOAD", "LD_LIBRARY_PATH", "dlopen", "ELF", "SONAME", "ld.so")


def _fork_release(mingw_build, folder: Path) -> Path:  # type: ignore[no-untyped-def]
    folder.mkdir()
    for name, flag in {"nvcuda.dll": "DRIVER", "nvml.dll": "NVML", "cublas.dll": "CUBLAS"}.items():
        shutil.copy2(mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}"]), folder / name)
    shutil.copy2(mingw_build(["windows/injector.c"], "zluda.exe", shared=False,
                                    args=["-municode"]), folder / "zluda.exe")
    return folder


def test_a_plain_exe_is_the_target_and_is_inspected(mingw_build, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cudart = mingw_build(["plan/win_stub.c"], "cudart64_12.dll", args=["-DCUDART"])
    exe = tmp_path / "app" / "cuda_program.exe"
    exe.parent.mkdir()
    shutil.copy2(mingw_build(["windows/cuda_program.c", cudart], "cuda_program.exe", shared=False), exe)
    shutil.copy2(cudart, exe.parent / "cudart64_12.dll")
    settings = Settings(cache_dir=tmp_path / "cache")
    choice = choose_target([str(exe)], settings)
    assert (choice.python, choice.binary) == (None, str(exe.resolve()))
    profile = inspect_target(choice, settings, {})
    assert profile is not None and profile.os == "windows"
    assert profile.library("cudart64_12.dll") is not None
    plan = make_plan(profile, scan_release_dir(_fork_release(mingw_build, tmp_path / "zluda")))
    driver = next(b for b in plan.bindings if b.need == "nvcuda.dll")
    assert driver.mechanism == "injector" and driver.requested_by == ("cudart64_12.dll (LoadLibrary)",)
    text = "\n".join(plan_lines(plan))
    # the injector (zluda.exe) starts it and loads nvcuda.dll: the view whole
    assert_golden("windows_wording_plain_exe_plan", text + "\n", tmp=tmp_path)
    for word in LINUX_WORDS:
        assert word not in text and word not in json.dumps(plan.to_dict()), word


def test_an_uninspectable_command_is_assumed_in_its_platform_s_words(mingw_build, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    layout = scan_release_dir(_fork_release(mingw_build, tmp_path / "zluda"))
    note = assumed_target(["webui-user.bat"], layout).warnings[0]
    assert_golden("windows_wording_assumed_target", note + "\n", tmp=tmp_path)  # not a PE program: injector
    assert not any(word in note for word in LINUX_WORDS)
    assert "LD_AUDIT" in assumed_target(["run.sh"], dataclasses.replace(layout, os="linux")).warnings[0]
