"""The Windows side of the plan: how each ZLUDA DLL comes to be the module the target uses.

Two ways, and only two, make a ZLUDA DLL the one a Windows process uses:

* **taken by name** from a folder the requester searches: torch/lib DLLs load their imports
  with ``LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR``, so a ``cublas64_11.dll`` placed in torch/lib is
  what ``torch_cuda.dll`` gets;
* **already loaded** under the base name when the requester asks: NVIDIA's cudart loads
  ``nvcuda.dll`` in a restricted search (modules already loaded, System32; measured under
  Wine with the real cudart 11.8 and 12: never the application folder, torch/lib or PATH).
  A driver placed in torch/lib is used only because torch's ``__init__`` loads every
  ``torch/lib/*.dll`` first (its DLL loop, read from the target's own ``__init__.py``).
  Without that loop the plan says placement is not enough and picks the alternative: our
  preload (Python workloads: a ``sitecustomize`` loading the DLLs by full path first), or the
  release's injector (``zluda.exe``) for any other program.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.plan.model import (
    FATAL,
    MECH_DLL_PLACEMENT,
    MECH_NONE,
    OK,
    Binding,
    ShimPlan,
    WindowsPlacement,
)
from zluda_runner.release.layout import ReleaseLayout, ShimFile

if TYPE_CHECKING:  # the loader model is not needed to run a cached plan
    from zluda_runner.loader.windows import TorchDllLoop

MECH_PRELOAD = "preload"  # loaded by full path before the workload (launch.windows_preload)
MECH_INJECTOR = "injector"  # the release's zluda.exe starts the program with ZLUDA loaded

# Families loaded at run time by name through a restricted search (or by a loader we do not model):
# only a module already loaded is sure to be taken.
LOADED_BY_NAME_AT_RUN_TIME = frozenset({"driver", "nvml"})


@dataclass
class WindowsContext:
    """What decides the mechanism for a Windows target."""

    torch_lib: str | None  # the target's torch/lib; None for a program without torch
    loop: TorchDllLoop | None
    injector: str | None  # the release's zluda.exe, if it ships one


def windows_context(target: object, layout: ReleaseLayout) -> WindowsContext:
    torch = getattr(target, "torch", None)
    torch_path = getattr(torch, "path", None) if torch is not None else None
    loop = None
    if torch_path:
        from zluda_runner.target.windows import read_torch_dll_loop

        loop = read_torch_dll_loop(Path(torch_path))
    return WindowsContext(
        torch_lib=str(Path(torch_path) / "lib") if torch_path else None,
        loop=loop,
        injector=layout.launchers.get("injector"),
    )


def _loop_text(loop: TorchDllLoop) -> str:
    flags = f"0x{loop.flags:x}" if loop.flags is not None else "?"
    return f"torch's DLL loop ({loop.where}: LoadLibraryExW(dll, None, {flags}) over every torch/lib/*.dll)"


def windows_mechanism(
    need_name: str, family: str, requested_by: list[str], ctx: WindowsContext
) -> tuple[str, list[str], list[str]]:
    """(mechanism, reasons, problems) for one replaced Windows DLL. ``problems`` make it fatal."""
    run_time = family in LOADED_BY_NAME_AT_RUN_TIME
    if ctx.torch_lib is None:  # a plain program: nothing loads the DLLs first
        why = (f"{need_name} is loaded by name at run time in a restricted search (modules already loaded, "
               "System32): a copy next to the program or on PATH is not taken, so placement is not enough")
        if not run_time:
            why = (f"a program without torch's DLL loop: {need_name} would be taken from the program's "
                   "folder, but its driver would not, so placement is not enough")
        if ctx.injector:
            return MECH_INJECTOR, [why, f"the release's injector ({Path(ctx.injector).name}) starts the "
                                   "program with ZLUDA's DLLs loaded first (`zluda-run run --injector`)"], []
        problem = f"{why}, and the release has no injector (zluda.exe): nothing would load ZLUDA first"
        return MECH_NONE, [problem], [problem]
    loop = ctx.loop
    if run_time:
        restricted = (f"{need_name} is loaded at run time by name in a restricted search (modules already "
                      "loaded, System32): a copy in torch/lib or on PATH is not found by that search")
        if loop is not None and loop.present:
            return MECH_DLL_PLACEMENT, [
                restricted,
                f"copied into torch/lib as {need_name}: {_loop_text(loop)} loads it first, so it is already "
                "loaded when asked for (original kept; `zluda-run restore` undoes it)",
            ], []
        return MECH_PRELOAD, [
            restricted,
            "this torch's __init__.py has no DLL loop to load it first, so placement is not enough: "
            "zluda-run preloads it by full path (sitecustomize on a private PYTHONPATH) before the workload "
            "imports torch",
        ], []
    inside = [r for r in requested_by if not r.endswith("(dlopen)")]
    taken = (f"taken by name from torch/lib: its requesters ({', '.join(inside[:3]) or 'torch/lib DLLs'}) "
             "search their own folder first (LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)")
    if loop is not None and loop.present:
        taken += f"; {_loop_text(loop)} also loads it first"
    return MECH_DLL_PLACEMENT, [
        f"copied into torch/lib as {need_name} (original kept; `zluda-run restore` undoes it)", taken,
    ], []


def verdict_of(problems: list[str]) -> str:
    return FATAL if problems else OK


def add_windows_placement(plan: ShimPlan, binding: Binding, shim: ShimFile) -> None:
    """The placement for one replaced binding, when its mechanism is placement."""
    if binding.mechanism != MECH_DLL_PLACEMENT or binding.shim is None:
        return
    plan.placements.append(WindowsPlacement(binding.shim, binding.need, shim.original_saved_as))


def windows_loader_setup(plan: ShimPlan, layout: ReleaseLayout) -> None:
    """The release folder first on PATH, so ZLUDA's DLLs find their own dependencies (HIP's DLLs, a
    fork's helpers) when the plain ``LoadLibraryW`` fallback of torch's loop or our preload loads them.
    (PATH does not make cudart take the driver: see the module doc.)"""
    if any(b.action == "replace" and b.shim for b in plan.bindings):
        plan.path_prepend.append(layout.root)


def preload_dlls(plan: ShimPlan) -> list[str]:
    """The ZLUDA DLLs our preload loads by full path (bindings with mechanism ``preload``)."""
    return [b.shim for b in plan.bindings if b.mechanism == MECH_PRELOAD and b.shim]


def uses_injector(plan: ShimPlan) -> bool:
    return any(b.mechanism == MECH_INJECTOR for b in plan.bindings)
