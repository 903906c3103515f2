"""Before launch: will Windows find each ZLUDA DLL's own dependencies (HIP's DLLs) where it looks?

"Error loading ... or one of its dependencies" is the failure users of ZLUDA on Windows report
most: ZLUDA's DLLs import ``amdhip64_6.dll``/``amdhip64_7.dll``, ``rocblas.dll``,
``hipblaslt.dll``, ``MIOpen.dll`` ..., which AMD's HIP SDK installs in ``%HIP_PATH%\\bin`` and
does not put on ``PATH``. This walk reads each placed DLL's import table (pefile), and the
imports of what it finds, and resolves every name the way Windows will for this launch:

* **placed in torch/lib**, loaded by torch's DLL loop (read from the target's ``__init__.py``):
  ``LoadLibraryExW(dll, None, 0x1100)`` (``LOAD_LIBRARY_SEARCH_DEFAULT_DIRS |
  LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR``) searches the DLL's own folder, the application folder
  (python.exe's), the folders ``__init__`` added with ``os.add_dll_directory`` (torch/lib,
  ``<prefix>\\Library\\bin``, ``<prefix>\\bin``) and System32; ``PATH`` is not searched. On
  error 126 only, the loop puts those folders first on ``PATH`` and retries with a plain
  ``LoadLibraryW``, whose search is the application folder, System32, the Windows folder and
  ``PATH``: the launched process's ``PATH``, which is ``plan.path_prepend`` (the release folder)
  followed by the ``PATH`` of the environment given;
* **preloaded** by our ``sitecustomize`` (``LoadLibraryExW(path, None,
  LOAD_WITH_ALTERED_SEARCH_PATH)``): the DLL's folder, System32, the Windows folder, ``PATH``;
* **injected** by the release's ``zluda.exe``: the program's folder, System32, the Windows
  folder, ``PATH``.

A dependency in none of those folders fails the load: the binding is fatal, named before
launch with the folder it is in (``HIP_PATH``/``HIP_PATH_xx`` of the environment given) and
the fix. Delay-load imports are not walked (they are resolved at the first call, not at load).

Host facts are inputs: ``PATH``, ``HIP_PATH*`` and the System32 folder come from the
environment given (``SystemRoot``); with no readable System32 (a Windows tree modelled from
another OS) a dependency found nowhere is a warning, since System32 may hold it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PureWindowsPath

from zluda_runner.binfmt.pe import read_pe
from zluda_runner.core.errors import BinaryFormatError
from zluda_runner.host.hipversion import gone_words
from zluda_runner.host.libraries import hip_sdk_bins, windows_variable
from zluda_runner.loader.windows import KNOWN_DLLS, SYSTEM32_DLLS, VC_RUNTIME_DLLS, is_api_set
from zluda_runner.plan.model import (
    FATAL,
    MECH_DLL_PLACEMENT,
    MECH_INJECTOR,
    MECH_PRELOAD,
    REPLACE,
    UNBOUND,
    WARN,
    Binding,
    ShimPlan,
    Verdict,
    worst,
)
from zluda_runner.plan.unbound import with_walked_dependencies

MAX_DEPTH = 8

ImportsOf = Callable[[str], Sequence[str]]


def read_static_imports(path: str) -> list[str]:
    """The DLLs a PE file imports at load time (not its delay-load imports); [] if unreadable."""
    try:
        return list(read_pe(path, exports=False).imports)
    except (BinaryFormatError, OSError):
        return []


# --------------------------------------------------------------------------- host facts (inputs)


@dataclass(frozen=True)
class WindowsHost:
    """What the walk knows of the machine: all from the environment given, never from the host."""

    path: tuple[str, ...] = ()  # PATH of the launched process (path_prepend, then the given PATH)
    system32: str | None = None  # the System32 folder, None when it cannot be looked into
    windows_dir: str | None = None
    hip_dirs: tuple[tuple[str, str], ...] = ()  # (variable, its bin folder): HIP_PATH, HIP_PATH_62 ...

    @classmethod
    def from_env(cls, env: Mapping[str, str], path_prepend: Sequence[str] = ()) -> WindowsHost:
        given = [p.strip().strip('"') for p in (windows_variable(env, "PATH") or "").split(os.pathsep)]
        root = windows_variable(env, "SystemRoot") or windows_variable(env, "windir")
        system32 = windows_dir = None
        if root and os.path.isdir(os.path.join(root, "System32")):
            system32, windows_dir = os.path.join(root, "System32"), root
        return cls(path=tuple(dict.fromkeys([*path_prepend, *filter(None, given)])), system32=system32,
                   windows_dir=windows_dir, hip_dirs=tuple(hip_sdk_bins(env)))


# --------------------------------------------------------------------------- search orders


@dataclass(frozen=True)
class Search:
    """One load attempt: the folders searched in order, and whether PATH is among them."""

    label: str
    folders: tuple[str, ...]
    uses_path: bool


@dataclass(frozen=True)
class Found:
    name: str
    path: str | None  # None: not found in any folder searched (or a system DLL: see ``system``)
    system: bool = False
    chain: tuple[str, ...] = ()  # the DLLs through which it is imported, the placed one first


@dataclass(frozen=True)
class WalkResult:
    """What one attempt found: every non-system dependency, found or not."""

    search: Search
    found: list[Found] = field(default_factory=list)

    @property
    def missing(self) -> list[Found]:
        return [f for f in self.found if f.path is None and not f.system]


class _Folders:
    """Case-insensitive listings of folders (Windows file names ignore case), read once."""

    def __init__(self) -> None:
        self._listing: dict[str, dict[str, str]] = {}

    def find(self, folder: str, name: str) -> str | None:
        listing = self._listing.get(folder)
        if listing is None:
            try:
                listing = {entry.lower(): entry for entry in os.listdir(folder)}
            except OSError:
                listing = {}
            self._listing[folder] = listing
        entry = listing.get(name.lower())
        return os.path.join(folder, entry) if entry else None


def _is_system(name: str, host: WindowsHost, folders: _Folders) -> bool:
    lowered = PureWindowsPath(name).name.lower()
    if is_api_set(lowered) or lowered in KNOWN_DLLS:
        return True
    if host.system32 is not None:
        return folders.find(host.system32, name) is not None
    return lowered in SYSTEM32_DLLS or lowered in VC_RUNTIME_DLLS


def walk(dll: str, imports_of: ImportsOf, search: Search, host: WindowsHost,
         folders: _Folders | None = None) -> WalkResult:
    """Every DLL that loading ``dll`` pulls in, resolved against ``search`` (the same folders for the
    whole load: Windows applies one attempt's search to all the dependencies it loads)."""
    folders = folders or _Folders()
    result = WalkResult(search)
    seen: set[str] = {PureWindowsPath(dll).name.lower()}
    queue: list[tuple[str, tuple[str, ...]]] = [(dll, (PureWindowsPath(dll).name,))]
    while queue:
        current, chain = queue.pop(0)
        if len(chain) > MAX_DEPTH:
            continue
        for name in imports_of(current):
            lowered = PureWindowsPath(name).name.lower()
            if lowered in seen:
                continue
            seen.add(lowered)
            if is_api_set(lowered) or lowered in KNOWN_DLLS:
                continue  # mapped by the loader itself, before any folder
            path = next((p for p in (folders.find(f, name) for f in search.folders) if p), None)
            if path is None and _is_system(name, host, folders):
                continue
            system_dirs = {d.lower() for d in (host.system32, host.windows_dir) if d}
            if path is not None and os.path.dirname(path).lower() in system_dirs:
                continue  # a system DLL: its own imports are the system's business
            result.found.append(Found(name, path, chain=chain))
            if path is not None:
                queue.append((path, (*chain, PureWindowsPath(path).name)))
    return result


def _existing(paths: Sequence[str | None]) -> list[str]:
    """The folders that exist, each once (Windows paths ignore case)."""
    out: dict[str, str] = {}
    for p in paths:
        if p and os.path.normcase(p) not in out and os.path.isdir(p):
            out[os.path.normcase(p)] = p
    return list(out.values())


def torch_dll_dirs(torch_lib: str) -> list[str]:
    """The folders torch's ``__init__`` passes to ``os.add_dll_directory`` (those that exist)."""
    torch_dir = os.path.dirname(torch_lib)
    site = os.path.dirname(torch_dir)
    prefix = os.path.dirname(os.path.dirname(site)) \
        if os.path.basename(site).lower() == "site-packages" else None
    return _existing([torch_lib, *([os.path.join(prefix, "Library", "bin"), os.path.join(prefix, "bin")]
                                  if prefix else [])])


def searches_for(binding: Binding, plan: ShimPlan, host: WindowsHost, *, loop_fallback: bool,
                 torch_lib: str | None, app_dir: str | None) -> list[Search]:
    """The load attempts Windows makes for this binding's DLL, in order."""
    system = _existing([host.system32, host.windows_dir])
    if binding.mechanism == MECH_DLL_PLACEMENT and torch_lib:
        dll_dirs = torch_dll_dirs(torch_lib)
        first = Search("torch's DLL loop (LoadLibraryExW, flags 0x1100)",
                       tuple(_existing([torch_lib, app_dir, *dll_dirs, host.system32])), uses_path=False)
        if not loop_fallback:
            return [first]
        retry = Search("its retry after error 126 (LoadLibraryW, torch's folders first on PATH)",
                       tuple(_existing([app_dir, *system, *dll_dirs, *host.path])), uses_path=True)
        return [first, retry]
    own = os.path.dirname(binding.shim or "")
    if binding.mechanism == MECH_PRELOAD:
        return [Search("our preload (LoadLibraryExW, LOAD_WITH_ALTERED_SEARCH_PATH)",
                       tuple(_existing([own, *system, *host.path])), uses_path=True)]
    if binding.mechanism == MECH_INJECTOR:
        program = os.path.dirname(plan.target.binary) if plan.target.binary else app_dir
        return [Search("the injector (zluda.exe)", tuple(_existing([program, *system, *host.path])),
                       uses_path=True)]
    return []


# --------------------------------------------------------------------------- verdicts


def _fix(dep: Found, searches: Sequence[Search], host: WindowsHost, placed_at: str) -> str:
    uses_path = any(s.uses_path for s in searches)
    where = next(((var, d) for var, d in host.hip_dirs if _Folders().find(d, dep.name)), None)
    if where is not None:
        var, folder = where
        if uses_path:
            return (f"it is in {folder} ({var}\\bin), which is not on PATH: add that folder to PATH "
                    f"(set PATH={folder};%PATH%) and run again")
        return f"it is in {folder} ({var}\\bin), which this load does not search: copy it next to {placed_at}"
    named = [(var, os.path.dirname(d)) for var, d in host.hip_dirs]
    gone = [(var, folder) for var, folder in named if not os.path.isdir(folder)]
    hip = "; ".join([*(f"{var}={folder}" for var, folder in named if (var, folder) not in gone),
                     *([gone_words(gone)] if gone else [])]) or "no HIP_PATH is set"
    return (f"it is not in a HIP SDK folder either ({hip}): install the HIP SDK this release is built for "
            "(it puts the file in %HIP_PATH%\\bin) and add its bin folder to PATH")


def _through(dep: Found) -> str:
    return f" (imported by {dep.chain[-1]})" if len(dep.chain) > 1 else ""


def check_binding(binding: Binding, plan: ShimPlan, host: WindowsHost, imports_of: ImportsOf, *,
                  loop_fallback: bool, torch_lib: str | None, app_dir: str | None,
                  folders: _Folders | None = None) -> Binding:
    """Walk one binding's DLL: the binding with where its dependencies come from, or with the fatal problem
    and the fix."""
    if binding.action != REPLACE or not binding.shim or not os.path.isfile(binding.shim):
        return binding
    searches = searches_for(binding, plan, host, loop_fallback=loop_fallback, torch_lib=torch_lib,
                            app_dir=app_dir)
    if not searches:
        return binding
    folders = folders or _Folders()
    shim = binding.shim
    results = [walk(shim, imports_of, s, host, folders) for s in searches]
    final = results[-1]
    placed = torch_lib is not None and binding.mechanism == MECH_DLL_PLACEMENT
    placed_at = os.path.join(torch_lib, binding.need) if placed and torch_lib else shim
    found = [f for f in final.found if f.path is not None]
    reasons: list[str] = []
    if found:
        reasons.append(f"its dependencies resolve for {final.search.label}: " + ", ".join(
            f"{f.name}{_through(f)} from {os.path.dirname(str(f.path))}" for f in found))
    if len(results) > 1 and results[0].missing and not final.missing:
        names = [f.name for f in results[0].missing]
        are, them = ("is", "it") if len(names) == 1 else ("are", "them")
        reasons.append(f"{', '.join(names)} {are} not found by {results[0].search.label}, which does "
                       f"not search PATH: that load fails with error 126, and {final.search.label} "
                       f"finds {them}")
    if not final.missing:
        return replace(binding, reasons=(*binding.reasons, *reasons))
    severity: Verdict = FATAL if host.system32 is not None else WARN
    unknown = "" if host.system32 is not None else " (System32 could not be looked into here: it may hold it)"
    problems = [f"{binding.need} needs {dep.name}{_through(dep)}, which is in none of the folders Windows "
                f"searches for it{unknown}: {_fix(dep, searches, host, placed_at)}" for dep in final.missing]
    searched = "searched: " + "; then ".join(
        f"{s.label}: {', '.join(s.folders) or 'no folder'}" for s in searches)
    return replace(binding, reasons=(*binding.reasons, *reasons, *problems, searched),
                   problems=(*binding.problems, *problems), verdict=worst([binding.verdict, severity]))


def walk_inputs(env: Mapping[str, str], path_prepend: Sequence[str] = ()) -> list[str]:
    """The folders the walk looks into (PATH, HIP_PATH*\\bin, System32): a cached plan is stale when one
    changes (a DLL installed or removed there)."""
    host = WindowsHost.from_env(env, path_prepend)
    return [*host.path, *(d for _, d in host.hip_dirs), *filter(None, [host.system32])]


def add_dependency_walk(plan: ShimPlan, env: Mapping[str, str], *, torch_lib: str | None,
                        loop_fallback: bool, app_dir: str | None,
                        imports_of: ImportsOf = read_static_imports) -> ShimPlan:
    """``plan`` with every placed/preloaded/injected ZLUDA DLL of it walked (after its loader set-up, so
    that ``plan.path_prepend`` is the PATH the launched process gets)."""
    host = WindowsHost.from_env(env, plan.path_prepend)
    folders = _Folders()  # each folder (System32: thousands of files) listed once per plan
    bindings = []
    for binding in plan.bindings:
        walked = check_binding(binding, plan, host, imports_of, loop_fallback=loop_fallback,
                               torch_lib=torch_lib, app_dir=app_dir, folders=folders)
        bindings.append(with_walked_dependencies(binding, walked))
    return _without_unbound(replace(plan, bindings=tuple(bindings)))


def _without_unbound(plan: ShimPlan) -> ShimPlan:
    """``plan`` with nothing placed or preloaded for a stand-in not bound: NVIDIA's DLL stays in torch/lib."""
    unbound = [b for b in plan.bindings if b.action == UNBOUND]
    if not unbound:
        return plan
    names = {b.need.lower() for b in unbound}  # placed (and preloaded from torch/lib) under these
    shims = {PureWindowsPath(b.shim).as_posix().lower() for b in unbound if b.shim}  # preloaded as is
    hook = plan.startup_hook
    if hook is not None:
        hook = replace(hook, preload=tuple(p for p in hook.preload if PureWindowsPath(p).name.lower() not in
                                           names and PureWindowsPath(p).as_posix().lower() not in shims))
    return replace(plan, startup_hook=hook,
                   placements=tuple(p for p in plan.placements if p.dest_name.lower() not in names))
