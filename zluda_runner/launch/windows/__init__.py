"""Windows launch: DLL placement (journaled, undoable), a preload, the release's injector.

One import for callers; the work is in
:mod:`~zluda_runner.launch.windows.journal` (the journal, read strictly),
:mod:`~zluda_runner.launch.windows.restoring` (restore, status: drift and quarantine),
:mod:`~zluda_runner.launch.windows.placing` (place, finish),
:mod:`~zluda_runner.launch.windows.preload` (the start-up code that loads ZLUDA first) and
:mod:`~zluda_runner.launch.windows.hook` (the ``.pth`` hook of a portable Python, journaled).

:func:`prepare_windows_launch` turns a Windows plan into what to run and with which
environment; :func:`plan_for_torch_lib` plans for a Windows ``torch/lib`` folder from any
host (a wheel, a mounted drive, a test fixture).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.errors import LaunchError, PlacementError
from zluda_runner.core.replace import InUseCheck
from zluda_runner.core.settings import Settings
from zluda_runner.launch.windows.journal import (
    IN_PROGRESS,
    JOURNAL_DIRNAME,
    JOURNAL_FILE,
    JOURNAL_SCHEMA,
    ORIGINALS_DIR,
    PLACED,
    FileState,
    Journal,
    JournalEntry,
    Placement,
    file_state,
    journal_dir_for,
    read_journal,
)
from zluda_runner.launch.windows.placing import (
    PlacementResult,
    place,
)
from zluda_runner.launch.windows.preload import PRELOAD_ENV
from zluda_runner.launch.windows.restoring import (
    FileStatus,
    PlacementStatus,
    RestoreResult,
)
from zluda_runner.launch.windows.restoring import restore as restore_placement
from zluda_runner.launch.windows.restoring import status as placement_status
from zluda_runner.plan.model import ShimPlan

__all__ = [
    "IN_PROGRESS", "JOURNAL_DIRNAME", "JOURNAL_FILE", "JOURNAL_SCHEMA", "ORIGINALS_DIR", "PLACED",
    "FileState", "FileStatus", "Journal", "JournalEntry", "Placement",
    "PlacementResult", "PlacementStatus", "RestoreResult", "WindowsLaunch",
    "file_state", "journal_dir_for", "place", "placements_of",
    "prepare_windows_launch", "read_journal", "restore", "status", "torch_lib_of", "zluda_exe_argv",
]


def zluda_exe_argv(release_dir: Path, argv: Sequence[str]) -> list[str]:
    """``[<release>/zluda.exe, "--", *argv]``: the release's own injector (Windows only)."""
    folder = Path(release_dir)
    names = folder.iterdir() if folder.is_dir() else iter(())
    exe = next((p for p in names if p.name.lower() == "zluda.exe"), None)
    if exe is None:
        raise LaunchError(
            f"{folder} has no zluda.exe", hint="this release cannot launch by injection: use DLL placement"
        )
    if not argv:
        raise LaunchError("no command given", hint="{usage}")
    return [str(exe), "--", *(str(a) for a in argv)]


def torch_lib_of(plan: ShimPlan) -> Path:
    torch = plan.target.torch_path
    if not torch:
        raise PlacementError("the plan does not say where torch is",
                             hint="pass {opt:torch_lib DIR} or {opt:python PY}")
    return Path(torch) / "lib"


def placements_of(plan: ShimPlan) -> list[Placement]:
    return [Placement(Path(p.source), p.dest_name, p.backup_name) for p in plan.placements]


@dataclass
class WindowsLaunch:
    """What :func:`prepare_windows_launch` decided: the argv to start, the variables to add."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    placement: PlacementResult | None = None
    preloaded: list[str] = field(default_factory=list)
    hook: str | None = None  # the .pth hook written (or found in place) for a portable Python
    warnings: list[str] = field(default_factory=list)


def startup_env(plan: ShimPlan, cache_dir: Path, base_env: Mapping[str, str], *,
                listing: bool = False, injected: bool = False) -> tuple[dict[str, str], str | None]:
    """The variables that make the workload's Python run our start-up code (preloads, and with
    ``listing`` the module listing at exit), and the ``.pth`` hook written for it (portable Python).
    ``injected``: the release's injector loads ZLUDA (nothing is placed): nothing to preload."""
    from zluda_runner.launch.startup import needs_startup
    from zluda_runner.launch.windows.preload import preload_env, pth_hook_env
    from zluda_runner.plan.model import HOOK_PTH
    from zluda_runner.plan.windows import preload_dlls

    dlls = [] if injected else preload_dlls(plan)
    hook = plan.startup_hook
    torch_defaults = needs_startup(plan)  # plan.defaults applied inside Python (launch.startup)
    if hook is not None and hook.kind == HOOK_PTH:
        if not dlls and not listing and not torch_defaults:
            return {}, None
        from zluda_runner.launch.windows.hook import install_pth_hook

        written = install_pth_hook(hook.folder or "", cache_dir)
        return pth_hook_env(dlls, cache_dir), str(written)
    if hook is None and not dlls:
        return {}, None
    return preload_env(dlls, cache_dir, base_env, always=listing or torch_defaults), None


def prepare_windows_launch(
    plan: ShimPlan,
    argv: Sequence[str],
    cache_dir: Path,
    *,
    injector: bool = False,
    base_env: Mapping[str, str] | None = None,
    journal_dir: Path | None = None,
    listing: bool = False,
) -> WindowsLaunch:
    """Carry out a Windows plan: place what is placed (re-placing after drift or quarantine, with a
    warning), set up the start-up code that loads what must be loaded first (a ``sitecustomize`` on
    a private ``PYTHONPATH``, or a portable Python's ``.pth`` hook), or start through the release's
    injector when the plan (or ``injector``) says so. ``listing``: the start-up code lists the
    process's modules at exit (``--verify-load``). The caller adds ``env`` to the workload's
    environment (after ``PATH`` from ``plan.path_prepend``) and runs ``argv``."""
    from zluda_runner.plan.model import HOOK_PTH
    from zluda_runner.plan.windows import uses_injector

    env_in = dict(os.environ if base_env is None else base_env)
    injected = injector or uses_injector(plan)
    if injected:
        if plan.release is None:
            raise LaunchError("the plan names no release folder", hint="pass {opt:zluda_dir DIR}")
        launch = WindowsLaunch(zluda_exe_argv(Path(plan.release.root), argv), dict(plan.env))
    else:
        launch = WindowsLaunch(list(argv), dict(plan.env))
        if plan.placements:
            hook = plan.startup_hook  # a portable Python's .pth hook is written there next
            also = [Path(hook.folder)] if hook is not None and hook.kind == HOOK_PTH and hook.folder else []
            launch.placement = place(torch_lib_of(plan), placements_of(plan), journal_dir, also_writes=also)
            launch.warnings.extend(launch.placement.warnings)
    env, launch.hook = startup_env(plan, cache_dir, env_in, listing=listing, injected=injected)
    launch.env.update(env)
    launch.preloaded = [p for p in env.get(PRELOAD_ENV, "").split(";") if p]
    return launch


def torch_lib_for(settings: Settings, torch_lib: str | Path | None) -> Path:
    """The torch/lib folder ``restore``/``status`` work on: ``--torch-lib``, else the target
    interpreter's. A path that is not a folder is an error (nothing is reported about nothing)."""
    if torch_lib is None:
        from zluda_runner.inspection.interpreter import probe_interpreter

        facts = probe_interpreter(settings.python or sys.executable, env=dict(os.environ))
        if not facts.torch_path:
            raise PlacementError(f"no torch in {facts.executable}: nothing placed there to check",
                                 hint="pass {opt:torch_lib DIR} or {opt:python PY}")
        torch_lib = Path(facts.torch_path) / "lib"
    folder = Path(torch_lib)
    if not folder.is_dir():
        raise PlacementError(f"{folder} is not a folder",
                             hint="pass {opt:torch_lib} the torch/lib folder of the target")
    return folder


def _site_of(torch_lib: Path) -> Path:
    return Path(torch_lib).parent.parent


def restore(torch_lib: Path, journal_dir: Path | None = None, *, cache_dir: Path | None = None,
            check: InUseCheck | None = None) -> RestoreResult:
    """Put back exactly what was in ``torch_lib`` before placement, of what is still zluda-run's
    (:func:`~zluda_runner.launch.windows.restoring.restore`: a file pip wrote since is kept, listed
    in ``kept``); then, once no placement remains there to serve, remove zluda-run's ``.pth`` hooks
    (the start-up hook, the placed-defaults hook) from this torch's site-packages (listed in
    ``removed`` by their paths; ``cache_dir`` holds the hook journal). With only a hook to remove,
    that is the restore. A file zluda-run did not place is never replaced."""
    from zluda_runner.core.errors import PlacementError
    from zluda_runner.core.paths import default_cache_dir
    from zluda_runner.launch.windows.hook import our_hooks, remove_pth_hook

    journal = journal_dir_for(torch_lib, journal_dir) / JOURNAL_FILE  # there: a placement remains
    hooks = our_hooks(_site_of(torch_lib))  # the start-up hook, the placed-defaults hook
    try:
        result = restore_placement(torch_lib, journal_dir, check=check)
    except PlacementError:
        if not hooks or journal.exists():
            raise
        result = RestoreResult(Path(torch_lib))
    for hook in [] if journal.exists() else hooks:
        if remove_pth_hook(hook, cache_dir or default_cache_dir()):
            result.removed.append(str(hook))
    return result


def status(torch_lib: Path, journal_dir: Path | None = None, placements: Sequence[Placement] | None = None,
           *, deep: bool = False) -> PlacementStatus:
    """Is the placement intact (:func:`~zluda_runner.launch.windows.restoring.status`)? The advice also
    names zluda-run's ``.pth`` start-up hook in this torch's site-packages, when there is one."""
    from zluda_runner.launch.windows.hook import hook_note, our_hooks

    result = placement_status(torch_lib, journal_dir, placements, deep=deep)
    for hook in our_hooks(_site_of(torch_lib)):
        result.hooks.append(hook)
        note = hook_note(hook)
        result.advice = f"{result.advice}; {note}" if result.advice else note
    return result
