"""The Windows side of the plan: how each ZLUDA DLL comes to be the module the target uses.

Two ways, and only two, make a ZLUDA DLL the one a Windows process uses:

* **taken by name** from a folder the requester searches: torch/lib DLLs load their imports
  with ``LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR``, so a ``cublas64_11.dll`` placed in torch/lib is
  what ``torch_cuda.dll`` gets;
* **already loaded** under the base name when the requester asks: NVIDIA's cudart loads
  ``nvcuda.dll`` in a restricted search (modules already loaded, System32; measured under
  Wine with the real cudart 11.8 and 12: never the application folder, torch/lib or PATH),
  and so does a workload's own ``ctypes.WinDLL("nvcuda.dll")`` (Python 3.8+ searches the
  application folder, System32 and ``os.add_dll_directory`` folders, never PATH).
  A driver placed in torch/lib is used only because torch's ``__init__`` loads every
  ``torch/lib/*.dll`` first (its DLL loop, read from the target's own ``__init__.py``).

What loads a driver first, for the way the user starts Python (``TargetProfile.startup``):

* a regular interpreter or venv honours ``PYTHONPATH``: zluda-run's start-up code is a
  ``sitecustomize`` in a private folder of the cache, first on the workload's ``PYTHONPATH``;
* a portable interpreter (``python3XX._pth``, ComfyUI/SD.Next) ignores ``PYTHONPATH``; with an
  active ``import site`` line it processes the ``.pth`` files of the site-packages folder its
  ``._pth`` lists, so the start-up code is reached through one inert line there
  (``zluda_runner_startup.pth``, acting only while ``ZLUDA_RUNNER_STARTUP`` names the code in the
  cache; journaled, removed by ``zluda-run restore``);
* without ``import site`` nothing of ours can run inside the interpreter: torch's DLL loop
  (placement), else the release's injector (``zluda.exe``), else a fatal verdict with the fix.

The start-up code loads the ZLUDA driver by full path (the release's, or the copy placed in
torch/lib) before the workload's first line: cudart and a workload's own ``ctypes`` load then
find the module already loaded. Any other program needs the injector.
"""

from __future__ import annotations

import ntpath
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.plan.model import (
    FATAL,
    HOOK_PTH,
    HOOK_SITECUSTOMIZE,
    MECH_DLL_PLACEMENT,
    MECH_INJECTOR,
    MECH_NONE,
    MECH_PRELOAD,
    OK,
    REPLACE,
    Binding,
    Mechanism,
    ShimPlan,
    StartupHook,
    Verdict,
    WindowsPlacement,
)
from zluda_runner.release.layout import ReleaseLayout, ShimFile

if TYPE_CHECKING:  # the loader model is not needed to run a cached plan
    from zluda_runner.inspection.profile import PythonStartup, TargetProfile
    from zluda_runner.loader.windows import TorchDllLoop

PTH_HOOK_NAME = "zluda_runner_startup.pth"
STARTUP_ENV = "ZLUDA_RUNNER_STARTUP"  # names the start-up code (in the cache) the .pth line runs

# Families loaded at run time by name through a restricted search (or by a loader we do not model):
# only a module already loaded is sure to be taken.
LOADED_BY_NAME_AT_RUN_TIME = frozenset({"driver", "nvml"})


@dataclass(frozen=True)
class WindowsContext:
    """What decides the mechanism for a Windows target."""

    torch_lib: str | None  # the target's torch/lib; None for a program without torch
    loop: TorchDllLoop | None
    injector: str | None  # the release's zluda.exe, if it ships one
    python: bool = False  # a Python workload (an interpreter, or a torch folder run by one)
    hook: StartupHook | None = None  # how our start-up code runs in it; None: it cannot
    no_hook: str = ""  # why it cannot (and the fix)
    pth_file: str | None = None


def _join(folder: str, name: str) -> str:
    """A file in a folder, in the folder's own path syntax (a Windows tree planned from Linux too)."""
    return ntpath.join(folder, name) if "\\" in folder else os.path.join(folder, name)


def _same_dir(a: str, b: str) -> bool:
    return ntpath.normcase(ntpath.normpath(a)) == ntpath.normcase(ntpath.normpath(b))


def choose_startup_hook(startup: PythonStartup | None,
                        torch_path: str | None) -> tuple[StartupHook | None, str]:
    """How zluda-run's start-up code can run before a Windows workload's first line: (hook, why not).

    ``startup`` None is a regular interpreter (the probe did not say otherwise)."""
    if startup is None or not startup.portable:
        if startup is None or (startup.honours_pythonpath and startup.site_enabled):
            return StartupHook(HOOK_SITECUSTOMIZE, why=(
                "a regular interpreter (no ._pth) honours PYTHONPATH: zluda-run's sitecustomize, in a "
                "private folder of its cache put first on the workload's PYTHONPATH (nothing written into "
                "the target), runs before the workload's first line")), ""
        return None, ("the interpreter runs without site or ignores PYTHONPATH (-S, -E or -I): nothing of "
                      "zluda-run's runs before the workload")
    pth = startup.pth_file or "its ._pth file"
    if not startup.site_enabled or not startup.site_packages:
        return None, (f"{pth} has no active `import site` line: this portable interpreter ignores PYTHONPATH "
                      f"and processes no .pth file, so nothing of zluda-run's runs before the workload (fix: "
                      f"uncomment `import site` in {pth})")
    folders = list(startup.site_packages)
    site = torch_path and ntpath.dirname(torch_path.rstrip("\\/").replace("/", "\\"))
    folder = next((f for f in folders if site and _same_dir(f, site)), None)
    named = [f for f in folders if ntpath.basename(f.rstrip("\\/")).lower() == "site-packages"]
    folder = folder or (named or folders)[0]
    hook_file = _join(folder, PTH_HOOK_NAME)
    return StartupHook(HOOK_PTH, folder=folder, why=(
        f"{pth} makes this portable interpreter ignore PYTHONPATH, and its `import site` line processes the "
        f".pth files of {folder}: zluda-run writes {hook_file} there, one inert line that runs zluda-run's "
        f"start-up code (kept in its cache) only while {STARTUP_ENV} is set (journaled in the cache; "
        "`zluda-run restore` removes it). It is the one file written beside the target's packages: the "
        "only place this interpreter reads start-up code from, short of editing its ._pth file")), ""


def windows_context(target: TargetProfile, layout: ReleaseLayout) -> WindowsContext:
    torch_path = target.torch.path if target.torch is not None else None
    loop = None
    if torch_path:
        from zluda_runner.inspection.windows import read_torch_dll_loop

        loop = read_torch_dll_loop(Path(torch_path))
    startup = target.startup
    python = bool(target.python or torch_path)
    hook, no_hook = choose_startup_hook(startup, torch_path) if python else (None, "")
    return WindowsContext(
        torch_lib=str(Path(torch_path) / "lib") if torch_path else None,
        loop=loop,
        injector=layout.launchers.get("injector"),
        python=python,
        hook=hook,
        no_hook=no_hook,
        pth_file=startup.pth_file if startup is not None else None,
    )


def _loop_text(loop: TorchDllLoop) -> str:
    flags = f"0x{loop.flags:x}" if loop.flags is not None else "?"
    return f"torch's DLL loop ({loop.where}: LoadLibraryExW(dll, None, {flags}) over every torch/lib/*.dll)"


def _hook_reasons(hook: StartupHook, family: str) -> list[str]:
    """Where a portable Python's hook goes, and why there, said once (with the driver)."""
    return [hook.why] if hook.kind == HOOK_PTH and family == "driver" else []


def _hook_text(hook: StartupHook) -> str:
    if hook.kind == HOOK_PTH:
        return f"zluda-run's start-up code, run through {_join(hook.folder or '', PTH_HOOK_NAME)}"
    return "zluda-run's start-up code (a sitecustomize on a private PYTHONPATH folder in the cache)"


def _restricted(need_name: str) -> str:
    return (f"{need_name} is loaded at run time by name in a restricted search (modules already loaded, "
            "System32; a workload's own ctypes load: the application folder, System32, "
            "os.add_dll_directory folders): a copy in torch/lib or on PATH is not found by that search")


def _not_loaded_first(
    need_name: str, ctx: WindowsContext, why: str
) -> tuple[Mechanism, list[str], list[str]]:
    """Nothing of ours can load ``need_name`` first: the injector, or a fatal verdict with the fix."""
    if ctx.injector:
        return MECH_INJECTOR, [why, f"the release's injector ({Path(ctx.injector).name}) starts the program "
                               "with ZLUDA's DLLs loaded first (`zluda-run run --injector`)"], []
    problem = (f"{why}, and the release has no injector (zluda.exe): nothing would load ZLUDA's "
               f"{need_name} first")
    return MECH_NONE, [problem], [problem]


def windows_mechanism(
    need_name: str, family: str, requested_by: Sequence[str], ctx: WindowsContext
) -> tuple[Mechanism, list[str], list[str]]:
    """(mechanism, reasons, problems) for one replaced Windows DLL. ``problems`` make it fatal."""
    run_time = family in LOADED_BY_NAME_AT_RUN_TIME
    hook = ctx.hook
    if ctx.torch_lib is None:  # a program without torch's loop: nothing of torch loads the DLLs first
        if ctx.python and hook is not None:
            return MECH_PRELOAD, [
                _restricted(need_name),
                "a Python workload without torch (its own ctypes load, or a library that loads the driver): "
                f"{_hook_text(hook)} loads the release's {need_name} by full path before its first line, "
                f"so a later LoadLibrary(\"{need_name}\") finds the module already loaded",
                *_hook_reasons(hook, family),
            ], []
        if ctx.python:
            why = f"{need_name} must be loaded first by something in the process: {ctx.no_hook}"
        elif run_time:
            why = (f"{need_name} is loaded by name at run time in a restricted search (modules already "
                   "loaded, System32): a copy next to the program or on PATH is not taken, so placement is "
                   "not enough")
        else:
            why = (f"a program without torch's DLL loop: {need_name} would be taken from the program's "
                   "folder, but its driver would not, so placement is not enough")
        return _not_loaded_first(need_name, ctx, why)
    loop = ctx.loop
    if run_time:
        if loop is not None and loop.present:
            reasons = [
                _restricted(need_name),
                f"copied into torch/lib as {need_name}: {_loop_text(loop)} loads it first, so it is already "
                "loaded when asked for (original kept; `zluda-run restore` undoes it)",
            ]
            if hook is not None:
                reasons.append(f"{_hook_text(hook)} also loads the placed torch/lib/{need_name} by full path "
                               f"before the workload's first line: a workload that loads {need_name} itself "
                               "(ctypes, before `import torch`) finds it already loaded")
                reasons.extend(_hook_reasons(hook, family))
            else:
                reasons.append(f"a workload that loads {need_name} itself before `import torch` (ctypes) "
                               f"would not get it: {ctx.no_hook}")
            return MECH_DLL_PLACEMENT, reasons, []
        if hook is not None:
            return MECH_PRELOAD, [
                _restricted(need_name),
                "this torch's __init__.py has no DLL loop to load it first, so placement is not enough: "
                f"{_hook_text(hook)} loads it by full path before the workload imports torch",
                *_hook_reasons(hook, family),
            ], []
        return _not_loaded_first(need_name, ctx, (
            f"this torch's __init__.py has no DLL loop to load {need_name} first, so placement is not "
            f"enough; {ctx.no_hook}"))
    inside = [r for r in requested_by if not r.endswith(("(dlopen)", "(LoadLibrary)"))]
    taken = (f"taken by name from torch/lib: its requesters ({', '.join(inside[:3]) or 'torch/lib DLLs'}) "
             "search their own folder first (LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)")
    if loop is not None and loop.present:
        taken += f"; {_loop_text(loop)} also loads it first"
    return MECH_DLL_PLACEMENT, [
        f"copied into torch/lib as {need_name} (original kept; `zluda-run restore` undoes it)", taken,
    ], []


def verdict_of(problems: Sequence[str]) -> Verdict:
    return FATAL if problems else OK


def windows_placement(binding: Binding, shim: ShimFile) -> WindowsPlacement | None:
    """The placement for one replaced binding, when its mechanism is placement."""
    if binding.mechanism != MECH_DLL_PLACEMENT or binding.shim is None:
        return None
    return WindowsPlacement(binding.shim, binding.need, shim.original_saved_as)


def windows_loader_setup(plan: ShimPlan, layout: ReleaseLayout, ctx: WindowsContext | None) -> ShimPlan:
    """``plan`` with the release folder first on PATH, so ZLUDA's DLLs find their own dependencies (HIP's
    DLLs, a fork's helpers) when the plain ``LoadLibraryW`` fallback of torch's loop or our preload loads
    them. (PATH does not make cudart take the driver: see the module doc.) For a Python workload
    (``ctx``, from :func:`windows_context`), the start-up hook and what it loads by full path, driver
    first."""
    if any(b.action == REPLACE and b.shim for b in plan.bindings):
        plan = replace(plan, path_prepend=(*plan.path_prepend, layout.root))
    if ctx is None or ctx.hook is None:
        return plan
    preload: list[str] = []
    for b in sorted(plan.bindings, key=lambda b: b.family != "driver"):
        if b.action != REPLACE or not b.shim:
            continue
        if b.mechanism == MECH_PRELOAD:
            preload.append(b.shim)
        elif (b.mechanism == MECH_DLL_PLACEMENT and b.family in LOADED_BY_NAME_AT_RUN_TIME
              and ctx.torch_lib):
            preload.append(_join(ctx.torch_lib, b.need))
    return replace(plan, startup_hook=replace(ctx.hook, preload=tuple(preload)))


def preload_dlls(plan: ShimPlan) -> list[str]:
    """The ZLUDA DLLs our start-up code loads by full path (the release's, or copies placed in torch/lib)."""
    if plan.startup_hook is not None:
        return list(plan.startup_hook.preload)
    return [b.shim for b in plan.bindings if b.mechanism == MECH_PRELOAD and b.shim]


def uses_injector(plan: ShimPlan) -> bool:
    return any(b.mechanism == MECH_INJECTOR for b in plan.bindings)
