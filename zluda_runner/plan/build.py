"""The shim plan: for every CUDA library the target needs, what ZLUDA puts in its place, how, and
whether the loader will really take it.

Pure function of three inputs, so it can be run, printed and tested apart:
a :class:`~zluda_runner.inspection.profile.TargetProfile` (what the build asks the loader
for, and where the loader takes it from today), a
:class:`~zluda_runner.release.layout.ReleaseLayout` (what the release offers) and the
shims' own facts (ELF read with :mod:`zluda_runner.binfmt.elf`, PE with :mod:`zluda_runner.binfmt.pe`).

The mechanism is chosen per need from the loader model, not by habit:

* a need the loader finds through ``LD_LIBRARY_PATH`` or later in the search
  order (DT_RUNPATH, ld.so.cache, default dirs, or nowhere) is served by a
  per-plan folder of correctly named links put first on ``LD_LIBRARY_PATH``;
* a need a requester reaches through its DT_RPATH (PyPI torch:
  ``libtorch_cuda.so`` -> ``$ORIGIN/../../nvidia/cu13/lib``) cannot be won by
  ``LD_LIBRARY_PATH``: it goes through an ``LD_AUDIT`` redirector
  (``la_objsearch``), the release's own ``zluda_ld`` when it ships one, else ours;
* on Windows (:mod:`zluda_runner.plan.windows`) the DLLs are placed into torch/lib under the
  needed names (journalled, reversible); the driver is used because torch's own DLL loop
  loads it first (cudart's search would not find it there, nor on PATH); without that loop,
  a preload or the release's injector. Each DLL's own imports (HIP's DLLs) are then walked the
  way Windows resolves them for that launch (:mod:`zluda_runner.plan.windows_deps`).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from zluda_runner.core.errors import PlanError
from zluda_runner.core.paths import real_path
from zluda_runner.inspection.profile import TargetProfile

# --------------------------------------------------------------------------- matching
from zluda_runner.plan.model import (
    INHERITED_VARIABLES,
    KEEP,
    KEEP_FAMILIES,
    MECH_LD_AUDIT,
    MECH_LD_LIBRARY_PATH,
    MECH_NONE,
    MISSING,
    MISSING_CONSEQUENCE,
    OK,
    REPLACE,
    WARN,
    Binding,
    Mechanism,
    PlanTarget,
    ReleaseRef,
    ShimPlan,
    Verdict,
    WindowsPlacement,
    worst,
)
from zluda_runner.plan.shimdeps import ShimDeps, resolve_shim_deps
from zluda_runner.plan.shimfacts import (
    ShimFacts,
    check_machine,
    check_symbols,
    check_versions,
    read_shim_facts,
)
from zluda_runner.plan.unbound import with_missing_dependencies
from zluda_runner.plan.windows import (
    WindowsContext,
    verdict_of,
    windows_context,
    windows_loader_setup,
    windows_mechanism,
    windows_placement,
)
from zluda_runner.plan.windows_deps import add_dependency_walk
from zluda_runner.release.layout import ReleaseLayout, ShimFile


@dataclass(frozen=True)
class _Need:
    name: str
    family: str
    major: int | None
    requested_by: tuple[str, ...]
    versions: tuple[str, ...]
    symbols: tuple[str, ...]
    via: str | None
    path: str | None
    reaches_by_rpath: bool


# How a requester that opens a library at run time is shown: dlopen on Linux, LoadLibrary on Windows.
RUN_TIME_SUFFIXES = ("(dlopen)", "(LoadLibrary)")


def _run_time_suffix(os_name: str) -> str:
    return RUN_TIME_SUFFIXES[1] if os_name == "windows" else RUN_TIME_SUFFIXES[0]


def _needs_of(target: TargetProfile) -> list[_Need]:
    needs: list[_Need] = []
    for lib in target.libraries:
        resolved = lib.resolved
        reaches = [r.via for r in lib.reach]
        needs.append(
            _Need(
                name=lib.name,
                family=lib.family,
                major=lib.major,
                requested_by=tuple(lib.requested_by),
                versions=tuple(lib.versions_required),
                symbols=tuple(lib.symbols),
                via=resolved.via if resolved else None,
                path=resolved.path if resolved else None,
                reaches_by_rpath=(resolved is not None and resolved.via == "rpath") or "rpath" in reaches,
            )
        )
    seen = {n.name for n in needs}
    for dl in target.dlopened:
        if dl.name in seen:
            continue
        resolved = dl.resolved
        needs.append(
            _Need(
                name=dl.name,
                family=dl.family,
                major=None,
                requested_by=tuple(f"{o} {_run_time_suffix(target.os)}" for o in dl.opened_by),
                versions=(),
                symbols=(),
                via=resolved.via if resolved else None,
                path=resolved.path if resolved else None,
                reaches_by_rpath=resolved is not None and resolved.via == "rpath",
            )
        )
    return needs


def _pick_shim(need: _Need, layout: ReleaseLayout, cuda_major: int | None) -> tuple[ShimFile | None, str]:
    """The release file for a need: exact load name first, then the family for the right CUDA major."""
    candidates = layout.for_family(need.family)
    lowered = need.name.lower()
    for shim in candidates:
        if any(n.lower() == lowered for n in shim.load_names):
            return shim, f"the release ships it as {Path(shim.path).name}, loadable as {need.name}"
    if need.family in ("driver", "nvml") and candidates:
        return candidates[0], f"the release's {need.family} library, loaded as {need.name}"
    if cuda_major is not None:
        for shim in candidates:
            if shim.cuda_major == cuda_major:
                return shim, (
                    f"the release's {need.family} for CUDA {cuda_major} ({Path(shim.path).name}), "
                    f"loaded under the needed name {need.name}"
                )
    if candidates:
        majors = sorted({str(s.cuda_major) for s in candidates if s.cuda_major is not None})
        serves = f"CUDA {', '.join(majors)}" if majors else "other names"
        return None, (
            f"the release's {need.family} stand-in is for {serves} "
            f"({', '.join(Path(s.path).name for s in candidates)}), not {need.name}"
        )
    return None, f"the release has no {need.family} stand-in"


def _mechanism_linux(need: _Need, torch_preloads: bool) -> tuple[Mechanism, str]:
    if torch_preloads and need.family not in ("driver", "nvml"):
        return MECH_LD_AUDIT, (
            "torch preloads its CUDA libraries by full path (ctypes, from nvidia/*/lib) before "
            f"libtorch_cuda.so: only an LD_AUDIT redirector answering the path request replaces {need.name}"
        )
    if need.reaches_by_rpath:
        return MECH_LD_AUDIT, (
            f"{', '.join(need.requested_by) or 'the target'} reaches {need.name} through DT_RPATH, which "
            "the loader searches before LD_LIBRARY_PATH: redirected with LD_AUDIT (la_objsearch)"
        )
    if need.via in ("already-loaded", "preload"):
        return MECH_LD_AUDIT, f"{need.name} is loaded early ({need.via}): redirected with LD_AUDIT"
    today = {
        None: "not found today",
        "not-found": "not found today",
        "ld_library_path": "found today through LD_LIBRARY_PATH",
        "runpath": "found today through DT_RUNPATH (searched after LD_LIBRARY_PATH)",
        "ld.so.cache": "found today in ld.so.cache (searched after LD_LIBRARY_PATH)",
        "default": "found today in a default folder (searched after LD_LIBRARY_PATH)",
    }.get(need.via, f"found today via {need.via}")
    return MECH_LD_LIBRARY_PATH, f"{today}: a folder of correctly named links first on LD_LIBRARY_PATH wins"


FactsReader = Callable[[str], ShimFacts]
ImportsReader = Callable[[str], Mapping[str, Sequence[str]]]
DepsResolver = Callable[[Sequence[str]], ShimDeps]


def read_imports(path: str) -> dict[str, list[str]]:
    """Versioned imports of an object, per DT_NEEDED file; unversioned C imports under ``""``."""
    from zluda_runner.inspection.readers import summarize_symbols

    try:
        summary = summarize_symbols(path)
    except Exception:  # an unreadable requester adds nothing
        return {}
    return {**summary.imports_by_file, "": summary.c_imports}


def _recount_needs(needs: Sequence[_Need], replaced_files: set[str],
                   imports_reader: ImportsReader) -> list[_Need]:
    """Symbols a need must provide, counted only from requesters that will really be loaded: NVIDIA's
    libcublas.so.13 is replaced, so its own imports from cuBLASLt do not count against that shim."""
    return [_recount(need, replaced_files, imports_reader) for need in needs]


def _recount(need: _Need, replaced_files: set[str], imports_reader: ImportsReader) -> _Need:
    kept = tuple(r for r in need.requested_by if real_path(r) not in replaced_files)
    if len(kept) == len(need.requested_by) or not need.symbols:
        return need
    wanted: dict[str, None] = {}
    for requester in kept:
        if requester.endswith(RUN_TIME_SUFFIXES):
            continue
        imports = imports_reader(requester)
        wanted.update(dict.fromkeys(imports.get(need.name, ())))
        wanted.update(dict.fromkeys(s for s in imports.get("", ()) if s in need.symbols))
    return replace(need, symbols=tuple(s for s in need.symbols if s in wanted), requested_by=kept)


def make_plan(
    target: TargetProfile,
    layout: ReleaseLayout,
    *,
    release: ReleaseRef | None = None,
    argv: Sequence[str] = (),
    facts_reader: FactsReader = read_shim_facts,
    base_env: Mapping[str, str] | None = None,
    imports_reader: ImportsReader = read_imports,
    deps_resolver: DepsResolver | None = None,
) -> ShimPlan:
    """Plan the shims for ``target`` (a TargetProfile) from ``layout``. Pure: touches no files but reads."""
    build = target.build
    if build == "rocm":
        raise PlanError(
            "the target is a ROCm build of torch: it runs natively on AMD GPUs and needs no ZLUDA",
            hint="run it directly, or compare it with a CUDA build under ZLUDA: {cmd:ab --b-python PY}",
        )
    if build == "cpu":
        raise PlanError(
            "the target is a CPU-only build of torch: there is nothing for ZLUDA to run",
            hint="install a CUDA build of torch (for the upstream rewrite: CUDA 12/13; for the fork: "
            "CUDA 11.8) in that environment",
        )
    os_name = target.os
    torch = target.torch
    torch_version = torch.version if torch else None
    cuda_major = target.cuda_major
    planned_for = PlanTarget(
        python=target.python,
        torch=torch_version,
        cuda=target.cuda_version,
        torch_path=torch.path if torch else None,
        binary=None if target.python else next(iter(target.roots), None),
    )
    warnings: list[str] = []
    if layout.os != os_name:
        warnings.append(f"the release folder holds {layout.os} libraries; the target is {os_name}")
    facts_cache: dict[str, ShimFacts] = {}
    needs = _needs_of(target)
    if not any(n.family == "driver" for n in needs):
        # Every CUDA program reaches the driver (cudart dlopens it by bare name).
        windows = os_name == "windows"
        driver_name, opener = ("nvcuda.dll", "cudart") if windows else ("libcuda.so.1", "libcudart")
        needs.append(_Need(driver_name, "driver", None, (f"{opener} {_run_time_suffix(os_name)}",), (), (),
                           None, None, False))
    replaced_files = {real_path(n.path) for n in needs
                      if n.path and _pick_shim(n, layout, cuda_major)[0] is not None}
    needs = _recount_needs(needs, replaced_files, imports_reader)
    # torch preloads by path; a target that could not be inspected is assumed to (build "unknown")
    torch_preloads = os_name == "linux" and (
        (torch is not None and bool(target.python)) or build == "unknown")
    win = windows_context(target, layout) if os_name == "windows" else None
    bindings = [_bind(need, layout, cuda_major, os_name, facts_cache, facts_reader, torch_preloads, win)
                for need in needs]
    env = dict(base_env or {})
    setup = _environment(bindings, needs, layout, torch_version, env, os_name, planned_for.torch_path)
    library_path: tuple[str, ...] = ()
    if os_name == "linux" and layout.os == "linux":
        resolver = deps_resolver or (lambda shims: resolve_shim_deps(shims, env))
        bindings, library_path = _with_shim_deps(bindings, resolver)
    needs_audit = any(b.action == REPLACE and b.mechanism == MECH_LD_AUDIT for b in bindings)
    plan = ShimPlan(
        release=release, target=planned_for, os=os_name, bindings=tuple(bindings), env=setup.env,
        library_path=library_path, placements=setup.placements, warnings=(*warnings, *setup.warnings),
        argv=tuple(argv),
    )
    plan = _with_loader_setup(plan, layout, needs_audit, facts_cache, facts_reader, win)
    if win is not None:  # after the loader set-up: plan.path_prepend is part of the launched PATH
        plan = add_dependency_walk(plan, env, torch_lib=win.torch_lib,
                                   loop_fallback=bool(win.loop is not None and win.loop.fallback_path),
                                   app_dir=os.path.dirname(target.python) if target.python else None)
    return replace(plan, inherited=tuple(
        v for v in INHERITED_VARIABLES if v in plan.env or _loader_var_used(plan, v)))


def _loader_var_used(plan: ShimPlan, var: str) -> bool:
    if var == "LD_LIBRARY_PATH":
        return bool(plan.link_map)
    if var in ("LD_AUDIT", "ZLUDA_RUNNER_REDIRECT_MAP"):
        return plan.audit_library is not None
    if var == "PATH":
        return bool(plan.path_prepend)
    return False


def _bind(
    need: _Need,
    layout: ReleaseLayout,
    cuda_major: int | None,
    os_name: str,
    facts_cache: dict[str, ShimFacts],
    facts_reader: FactsReader,
    torch_preloads: bool = False,
    win: WindowsContext | None = None,
) -> Binding:
    base = Binding(need=need.name, family=need.family, action=MISSING, shim=None, load_name=None,
                   mechanism=MECH_NONE, verdict=OK, requested_by=need.requested_by, found_now=need.path,
                   found_now_via=need.via)
    shim, why = _pick_shim(need, layout, cuda_major)
    if shim is None:
        if need.family in KEEP_FAMILIES:
            return replace(base, action=KEEP, load_name=need.name,
                           reasons=(f"NVIDIA's own {need.name} stays: it runs on top of ZLUDA's driver",))
        severity, consequence = MISSING_CONSEQUENCE.get(
            need.family, (WARN, f"calls into {need.family} will go to NVIDIA's library and fail on AMD")
        )
        return replace(base, verdict=severity, reasons=(why, consequence),
                       problems=(consequence,) if severity != OK else ())
    if shim.path not in facts_cache:
        facts_cache[shim.path] = facts_reader(shim.path)
    facts = facts_cache[shim.path]
    reasons = [why]
    verdicts: list[Verdict] = []
    problems: list[str] = []
    mechanism: Mechanism
    if os_name == "windows" and win is not None:
        mechanism, win_reasons, win_problems = windows_mechanism(need.name, need.family, need.requested_by,
                                                                 win)
        reasons.extend(win_reasons)
        verdicts.append(verdict_of(win_problems))
        problems.extend(win_problems)
    else:
        mechanism, mech_why = _mechanism_linux(need, torch_preloads)
        reasons.append(mech_why)
    for check in (
        check_machine(facts, os_name),
        check_versions(need.versions, facts, need.name) if os_name == "linux" else (OK, []),
        check_symbols(need.symbols, facts, os_name),
    ):
        verdicts.append(check[0])
        reasons.extend(check[1])
        if check[0] != OK:
            problems.extend(check[1])
    if os_name == "linux" and facts.readable and facts.soname != need.name:
        has = f"its SONAME is {facts.soname}" if facts.soname else "it has no SONAME"
        reasons.append(
            f"{has}: ld.so knows it only by the names it is opened under, so the launch opens it under "
            f"{need.name} (a path request for {need.name} is answered with that bare name)"
        )
    if shim.stub:
        stub = (f"the release's {Path(shim.path).name} stands in by name only: {shim.stub}; "
                f"calls into {need.name} fail at run time")
        verdicts.append(WARN)
        reasons.append(stub)
        problems.append(stub)
    verdict = worst(verdicts)
    return replace(
        base, action=REPLACE, shim=shim.path, load_name=need.name, mechanism=mechanism, verdict=verdict,
        reasons=tuple(reasons), problems=tuple(p for p in problems if verdict != OK), stub=shim.stub,
    )


@dataclass(frozen=True)
class _Environment:
    """What the launch environment gets from the bindings: variables, warnings, Windows placements."""

    env: dict[str, str]
    warnings: tuple[str, ...]
    placements: tuple[WindowsPlacement, ...]


def _environment(
    bindings: Sequence[Binding], needs: Sequence[_Need], layout: ReleaseLayout, torch_version: str | None,
    base_env: Mapping[str, str], os_name: str, torch_path: str | None,
) -> _Environment:
    env: dict[str, str] = {}
    warnings: list[str] = []
    placements: list[WindowsPlacement] = []
    families_replaced = {b.family for b in bindings if b.action == REPLACE}
    needed_families = {n.family for n in needs}
    # DISABLE_ADDMM_CUDA_LT=1 (no cuBLASLt served) is an applied default: plan.defaults (plan/defaults.py)
    for b in bindings:
        if b.action != REPLACE or b.shim is None:
            continue
        shim = next((s for s in layout.shims if s.path == b.shim), None)
        if shim is None:
            continue
        warnings.extend(_shim_environment(env, b, shim, os_name, torch_path))
        placement = windows_placement(b, shim) if os_name == "windows" else None
        if placement is not None:
            placements.append(placement)
    if "nccl" in needed_families and "nccl" not in families_replaced:
        warnings.append(
            "the target links NCCL and the release has no stand-in: `torchrun` with the nccl backend "
            "will fail; workers inherit this launch's environment, so use backend='gloo'"
        )
    for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION"):
        if var in base_env:
            warnings.append(f"{var}={base_env[var]} is passed through to the workload")
    return _Environment(env, tuple(warnings), tuple(placements))


def _shim_environment(env: dict[str, str], binding: Binding, shim: ShimFile, os_name: str,
                      torch_path: str | None) -> list[str]:
    """Variables a shim needs, set in ``env``; the warnings for those left to the user. The manifest
    says what each must hold (prose); the value is computed here: the only kind known is "the path of
    the original NVIDIA library, saved beside the shim" (the fork's nvrtc reads ZLUDA_NVRTC_LIB).
    Anything else is left to the user, with a warning."""
    warnings: list[str] = []
    for key, meaning in shim.needs_env.items():
        if shim.original_saved_as and torch_path and os_name == "windows":
            env.setdefault(key, str(Path(torch_path) / "lib" / shim.original_saved_as))
        else:
            warnings.append(f"{Path(shim.path).name} for {binding.need} reads {key}: {meaning}")
    return warnings


def _with_shim_deps(
    bindings: Sequence[Binding], resolver: DepsResolver
) -> tuple[list[Binding], tuple[str, ...]]:
    """Every shim's own DT_NEEDED, resolved on this host: a missing one makes the driver's and cuBLAS's
    bindings fatal and leaves any other stand-in unbound (:mod:`zluda_runner.plan.unbound`). The
    bindings with what was found, and the folders the shims need on the library path."""
    deps = resolver([b.shim for b in bindings if b.action == REPLACE and b.shim])
    checked: list[Binding] = []
    for b in bindings:
        if b.action != REPLACE or not b.shim:
            checked.append(b)
            continue
        shim = b.shim
        b = replace(b, reasons=(*b.reasons, *deps.notes.get(shim, ())))
        checked.append(with_missing_dependencies(b, deps.problems.get(shim, ())))
    return checked, tuple(dict.fromkeys(deps.library_path))


def _audit_choice(bindings: Sequence[Binding], layout: ReleaseLayout, facts_cache: dict[str, ShimFacts],
                  facts_reader: FactsReader) -> tuple[str, str]:
    """The release's ``zluda_ld`` answers every request, by path too, with a path: ld.so then registers
    a shim first opened by path (torch's ctypes preloads) under that path only, and the next version
    need on the bare name aborts (dl-version.c ``needed != NULL``), unless the shim's SONAME is the
    needed name. Ours answers a path request with the bare name. So: the release's only when every
    redirected shim carries the needed name as its SONAME and sits beside zluda_ld under that name."""
    release_ld = layout.launchers.get("ld_audit")
    if not release_ld:
        return "ours", "the release ships no zluda_ld: our redirector (shims/redirect/redirect.c)"
    release_ld = os.path.abspath(release_ld)
    ld_dir = os.path.dirname(release_ld)
    for b in bindings:
        if b.action != REPLACE or b.mechanism != MECH_LD_AUDIT or not b.shim or b.need.endswith(".so"):
            continue  # (a development name such as libcublas.so is never a DT_NEEDED with version needs)
        if b.shim not in facts_cache:
            facts_cache[b.shim] = facts_reader(b.shim)
        soname = facts_cache[b.shim].soname
        if soname != b.need:
            has = f"SONAME {soname}" if soname else "no SONAME"
            return "ours", (
                f"the release's zluda_ld answers path requests with paths; {Path(b.shim).name} has {has}, so "
                f"a {b.need} first opened by path (torch preloads by path) would be known by its path only "
                f"and the next version need on {b.need} aborts ld.so (dl-version.c: needed != NULL). Ours "
                "answers a path request with the bare name"
            )
        if not os.path.exists(os.path.join(ld_dir, b.need)):
            return "ours", f"the release's zluda_ld redirects to its own folder, which has no {b.need}"
    return release_ld, (
        "every redirected shim carries the needed name as its SONAME and sits beside the release's "
        "zluda_ld: its path answers register the needed name, so the release's own zluda_ld is used"
    )


def _with_loader_setup(plan: ShimPlan, layout: ReleaseLayout, needs_audit: bool,
                       facts_cache: dict[str, ShimFacts], facts_reader: FactsReader,
                       win: WindowsContext | None) -> ShimPlan:
    """``plan`` with how the loader takes the shims: Windows placement/PATH/start-up hook, or Linux's
    folder of links and (where needed) the LD_AUDIT redirector."""
    if plan.os == "windows":
        return windows_loader_setup(plan, layout, win)
    link_map: dict[str, str] = {}
    for b in plan.bindings:
        if b.action != REPLACE or not b.shim or not b.load_name:
            continue
        link_map[b.load_name] = os.path.abspath(b.shim)
        # Programs that dlopen the unversioned development name get the same file.
        shim = next((s for s in layout.shims if s.path == b.shim), None)
        for alias in shim.load_names if shim else []:
            link_map.setdefault(alias, os.path.abspath(b.shim))
    if not needs_audit:
        return replace(plan, link_map=link_map)
    audit_library, audit_why = _audit_choice(plan.bindings, layout, facts_cache, facts_reader)
    return replace(plan, link_map=link_map, redirect_map=dict(link_map), audit_library=audit_library,
                   audit_why=audit_why)
