"""The facts the applied defaults follow (:mod:`zluda_runner.plan.defaults`), read for one plan: what the
release serves, its device identity (the manifest's ``compute_capability``), the host's AMD GPUs (the
KFD topology, Linux) and MIOpen (the ROCm / HIP SDK install), the user's environment.

Only small files are read (sysfs properties, a folder listing, the manifest), so a cached launch
stays fast; under ``ZLUDA_RUNNER_ROOT`` the host is a fake tree, as for every host reader.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.settings import Settings
from zluda_runner.core.units import format_bytes
from zluda_runner.host.fs import ROOT_ENV, HostFs, root_from_env
from zluda_runner.host.gpus import KFD_NODES, gpus_from_kfd
from zluda_runner.host.libraries import find_library, library_name
from zluda_runner.host.visibility import gpu_visibility, restated_env
from zluda_runner.plan.defaults import (
    DEDICATED_GPU,
    ComputeIdentity,
    DefaultsFacts,
    HostGpu,
    compute_defaults,
    defaults_env,
    plan_with_defaults,
    switch_off_warning,
)
from zluda_runner.plan.model import REPLACE, ShimPlan

# the kernel's KFD topology (drivers/gpu/drm/amd/amdkfd/kfd_topology.c, node_show): an APU's GPU node
# counts the CPU cores it shares a package with (cpu_cores_count); a dGPU's counts none and lists
# VRAM banks (mem_banks/N/properties heap_type 1 or 2)
_STUB_MARK = "stands in by name only"


def _props(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines()[:400]:
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _gpu_nodes(fs: HostFs) -> list[tuple[str, dict[str, int]]]:
    """(node name, properties) of the KFD GPU nodes, in the order :func:`gpus_from_kfd` lists them."""
    nodes = sorted((p for p in fs.glob(KFD_NODES, "*") if p.name.isdigit()), key=lambda p: int(p.name))
    found = []
    for node in nodes[:64]:
        try:
            props = _props((node / "properties").read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if props.get("simd_count", 0) > 0 and props.get("gfx_target_version", 0):
            found.append((node.name, props))
    return found


def host_gpus(fs: HostFs) -> tuple[HostGpu, ...]:
    """The host's AMD GPUs as HIP numbers them (KFD node order), each with the fact that says integrated."""
    agents = gpus_from_kfd(fs)
    nodes = _gpu_nodes(fs)
    gpus = []
    for i, agent in enumerate(agents):
        node, props = nodes[i] if len(nodes) == len(agents) else ("?", {})
        cores = props.get("cpu_cores_count", 0)
        if cores > 0:
            why = f"KFD node {node}: cpu_cores_count {cores} (shares the CPU's package: integrated)"
        elif agent.memory_bytes == 0:
            why = f"KFD node {node}: no VRAM bank of its own (integrated)"
        elif agent.integrated:
            why = f"KFD node {node}: {agent.gfx} is an APU's GPU (integrated)"
        else:
            vram = f"{format_bytes(agent.memory_bytes)} of VRAM" if agent.memory_bytes else "no CPU cores"
            why = f"KFD node {node}: {vram} (dedicated)"
        gpus.append(HostGpu(agent.index, agent.name, agent.gfx, agent.integrated, why))
    return tuple(gpus)


def registry_gpus() -> tuple[HostGpu, ...]:
    """Windows: the AMD display adapters of the registry (integrated told by the adapter's name; the
    registry's order is not HIP's, so these never choose a device, they only say one should be)."""
    from zluda_runner.host.gpus import windows_registry_gpus

    return tuple(HostGpu(a.index, a.name, a.gfx, a.integrated,
                         f"registry: {a.name!r}, {'integrated' if a.integrated else 'dedicated'} by its name"
                         + (f", {format_bytes(a.memory_bytes)}" if a.memory_bytes else ""))
                 for a in windows_registry_gpus())


def _identity(plan: ShimPlan, settings: Settings) -> ComputeIdentity | None:
    rel = plan.release
    if rel is None or not rel.id:
        return None
    from zluda_runner.release.manifest import load_current_manifest

    try:
        cc = load_current_manifest(settings.manifest, settings.cache_dir).find(rel.id).compute_capability
    except ZludaRunnerError:
        return None
    if cc is None:
        return None
    cited = f"manifest {rel.id} compute_capability ({cc.source.cite()})"
    return ComputeIdentity(cc.text, cc.override_env, cited)


def _served(plan: ShimPlan) -> tuple[tuple[str, ...], dict[str, str]]:
    files: dict[str, str] = {}
    for b in plan.bindings:
        if b.action == REPLACE and b.shim and not any(_STUB_MARK in r for r in b.reasons):
            files.setdefault(b.family, Path(b.shim).name)
    return tuple(files), files


def _host_os(platform: str) -> str:
    return "windows" if platform == "win32" else "linux" if platform.startswith("linux") else platform


REGISTRY = "Windows registry"


def _host_gpu_facts(fs: HostFs, platform: str) -> tuple[tuple[HostGpu, ...], str | None]:
    """This host's AMD GPUs and where they were read (None: none known): the KFD topology on Linux, the
    registry on Windows (a fake root has no registry)."""
    if platform.startswith("linux"):
        gpus = host_gpus(fs)
        return gpus, "KFD topology" if gpus else None
    if platform == "win32" and fs.root is None:
        found = registry_gpus()
        return found, REGISTRY if found else None
    return (), None


def workload_gpu_env(settings: Settings, env: Mapping[str, str],
                     platform: str | None = None) -> dict[str, str]:
    """``env`` as the workload's choice of GPU sees it: with the ``dedicated-gpu`` default's
    ``HIP_VISIBLE_DEVICES`` where that default applies on this host (an integrated and a dedicated GPU,
    no visibility variable of the user's, defaults on), decided by the very code the plan's defaults
    run; else ``env`` as is (the user's ``HIP_VISIBLE_DEVICES``, or HIP's device 0 with --no-defaults).
    Release selection judges the manifest's GPU x HIP rules on the first GPU this leaves visible
    (:func:`zluda_runner.host.quick.target_gfx`), the plan's defaults set what the workload gets. Where
    the host's GPUs are known in HIP's order, the user's choice comes restated as plain indices
    (:func:`~zluda_runner.host.visibility.restated_env`: ``HIP_VISIBLE_DEVICES=-1`` hides every GPU, so
    none is judged), for judging only."""
    plat = platform or sys.platform
    gpus, source = _host_gpu_facts(HostFs(root_from_env(env.get(ROOT_ENV) or "")), plat)
    chosen = gpu_choice_env(gpus, source, env, enabled=settings.defaults, platform=plat)
    if gpus and source != REGISTRY:
        # the user's value as ROCm reads it (``-1``, ``abc``: no GPU), not as a reader of plain indices
        # would guess it (host.visibility): the GPU judged is the one the workload gets, or none
        return restated_env(chosen, len(gpus))
    return chosen


def gpu_choice_env(gpus: tuple[HostGpu, ...], source: str | None, env: Mapping[str, str], *,
                   enabled: bool, platform: str) -> dict[str, str]:
    """``env`` with the ``dedicated-gpu`` default's ``HIP_VISIBLE_DEVICES`` where that default applies to
    ``gpus`` (read from ``source``; :data:`REGISTRY` is not HIP's order, so it never chooses), else ``env``
    as is: the one decision :func:`workload_gpu_env` and the doctor both follow."""
    if len(gpus) < 2:
        return dict(env)
    facts = DefaultsFacts(enabled=enabled, os=_host_os(platform), gpus=gpus, gpu_source=source,
                          gpu_order_known=source != REGISTRY, env=dict(env))
    chosen = [d for d in compute_defaults(facts) if d.name == DEDICATED_GPU]
    return {**env, **defaults_env(chosen)}


def gather_facts(plan: ShimPlan, settings: Settings, env: Mapping[str, str],
                 platform: str | None = None) -> DefaultsFacts:
    """The facts for ``plan`` on this host (``env``: the user's environment for the launch)."""
    plat = platform or sys.platform
    fs = HostFs(root_from_env(env.get(ROOT_ENV) or ""))
    same_host = _host_os(plat) == plan.os
    # MIOpen where the launch's loader takes it from (the finder the dependency checks and the doctor read)
    miopen = find_library(library_name("miopen", plat), env, plat, fs=fs, path_prepend=plan.path_prepend) \
        if same_host else None
    gpus, source = _host_gpu_facts(fs, plat) if same_host else ((), None)
    served, files = _served(plan)
    tgt = plan.target
    return DefaultsFacts(
        enabled=settings.defaults, os=plan.os, python=bool(tgt.python or tgt.torch_path),
        startup_hook=plan.startup_hook is not None, torch_version=tgt.torch,
        release_id=plan.release.id if plan.release else None,
        flavour=plan.release.flavour if plan.release else None,
        served=served, served_files=files, miopen=miopen.path if miopen else None,
        miopen_looked=miopen.searched() if miopen else None, gpus=gpus,
        gpu_source=source, gpu_order_known=source != REGISTRY,
        identity=_identity(plan, settings), env=dict(env),
    )


def with_defaults(plan: ShimPlan, settings: Settings, env: Mapping[str, str] | None = None) -> ShimPlan:
    """``plan`` with the defaults for this host and ``env`` (default: this process's environment)."""
    import os

    run_env = dict(os.environ if env is None else env)
    facts = gather_facts(plan, settings, run_env)
    plan = plan_with_defaults(plan, compute_defaults(facts))
    added = [w for w in (switch_off_warning(run_env), *visibility_warnings(plan.os, run_env))
             if w is not None and w not in plan.warnings]
    return replace(plan, warnings=(*plan.warnings, *added)) if added else plan


def visibility_warnings(plan_os: str, env: Mapping[str, str], platform: str | None = None) -> tuple[str, ...]:
    """What is wrong with the user's ``ROCR_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES`` /
    ``CUDA_VISIBLE_DEVICES`` for a workload of ``plan_os`` run here, read as ROCm reads them
    (:func:`~zluda_runner.host.visibility.gpu_visibility`): no GPU left visible (``-1``, ``abc``, an
    index past the last GPU), a list cut short, a UUID zluda-run cannot follow. Nothing for a plan of
    another OS (its workload does not run here); the host's GPU count where HIP's order is known."""
    plat = platform or sys.platform
    if _host_os(plat) != plan_os:
        return ()
    gpus, source = _host_gpu_facts(HostFs(root_from_env(env.get(ROOT_ENV) or "")), plat)
    count = len(gpus) if source is not None and source != REGISTRY else None
    return gpu_visibility(env, count).warnings
