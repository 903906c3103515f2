"""The facts the applied defaults follow (:mod:`zluda_runner.plan.defaults`), read for one plan: what the
release serves, its device identity (the manifest's ``compute_capability``), the host's AMD GPUs and HIP
(:func:`read_host`, once per run), MIOpen (the ROCm / HIP SDK install), the user's environment.

Only small files are read (sysfs properties, a folder listing), so a cached launch stays fast; under
``ZLUDA_RUNNER_ROOT`` the host is a fake tree, as for every host reader.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PureWindowsPath
from typing import TYPE_CHECKING

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.units import format_bytes
from zluda_runner.host.fs import ROOT_ENV, HostFs, root_from_env
from zluda_runner.host.gpus import gpus_from_kfd, kfd_gpu_nodes
from zluda_runner.host.libraries import find_library, library_name
from zluda_runner.host.model import GpuAgent
from zluda_runner.host.quick import QuickFacts, judged_gfx, quick_facts
from zluda_runner.host.visibility import gpu_visibility, restated_env
from zluda_runner.plan.defaults import (
    ADDMM_LT_TORCH,
    DEDICATED_GPU,
    ComputeIdentity,
    DefaultsFacts,
    HostGpu,
    addmm_lt_off,
    compute_defaults,
    cudnn_off,
    defaults_env,
    no_miopen_reason,
    plan_with_defaults,
    switch_off_warning,
)
from zluda_runner.plan.model import REPLACE, UNBOUND, AppliedDefault, ShimPlan
from zluda_runner.release.model import PINNED_MEMORY_FUNCTIONS

if TYPE_CHECKING:
    from zluda_runner.release.model import Manifest


# the kernel's KFD topology (drivers/gpu/drm/amd/amdkfd/kfd_topology.c, node_show): an APU's GPU node
# counts the CPU cores it shares a package with (cpu_cores_count); a dGPU's counts none and lists
# VRAM banks (mem_banks/N/properties heap_type 1 or 2)
def host_gpus(nodes: list[tuple[Path, dict[str, int]]], agents: list[GpuAgent]) -> tuple[HostGpu, ...]:
    """The host's AMD GPUs as HIP numbers them (the KFD topology's GPU ``nodes`` and their ``agents``,
    in node order), each with the fact that says integrated."""
    gpus = []
    for (folder, props), agent in zip(nodes, agents, strict=True):
        node, cores = folder.name, props.get("cpu_cores_count", 0)
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


def _identity(plan: ShimPlan, manifest: Manifest | None) -> ComputeIdentity | None:
    rel = plan.release
    if rel is None or not rel.id or manifest is None:
        return None
    try:
        cc = manifest.find(rel.id).compute_capability
    except ZludaRunnerError:
        return None
    if cc is None:
        return None
    cited = f"manifest {rel.id} compute_capability ({cc.source.cite()})"
    return ComputeIdentity(cc.text, cc.override_env, cited)


def _unpinned(plan: ShimPlan, manifest: Manifest | None) -> tuple[str, ...]:
    """The pinned-memory functions the plan's release does not implement, by the manifest's data."""
    rel = plan.release
    if rel is None or not rel.id or manifest is None:
        return ()
    try:
        gaps = manifest.find(rel.id).unimplemented
    except ZludaRunnerError:
        return ()
    return tuple(gaps.lacks(PINNED_MEMORY_FUNCTIONS)) if gaps is not None else ()


def _served(plan: ShimPlan) -> tuple[tuple[str, ...], dict[str, str], dict[str, str]]:
    """The families served (and their files), and the stand-ins not bound (family -> file)."""
    files: dict[str, str] = {}
    unbound: dict[str, str] = {}
    for b in plan.bindings:
        if b.action == REPLACE and b.shim and b.stub is None:
            files.setdefault(b.family, Path(b.shim).name)
        elif b.action == UNBOUND and b.shim:
            unbound.setdefault(b.family, PureWindowsPath(b.shim).name)
    return tuple(files), files, unbound


def _host_os(platform: str) -> str:
    return "windows" if platform == "win32" else "linux" if platform.startswith("linux") else platform


REGISTRY = "Windows registry"


@dataclass(frozen=True)
class HostRead:
    """The host as a run sees it, whatever it was asked (the fake tree of ``ZLUDA_RUNNER_ROOT`` where that
    names one): the quick facts (problems, the HIP found, HIP's device 0), the AMD GPUs in HIP's order
    where known, and the gfx the manifest's GPU x HIP rules judge with the defaults off and on."""

    platform: str
    fs: HostFs
    quick: QuickFacts
    gpus: tuple[HostGpu, ...]
    gpu_source: str | None  # where ``gpus`` were read (None: none known)
    gfx: str | None  # the GPU the user's environment leaves the workload (``--no-defaults``)
    default_gfx: str | None  # the one it gets with the ``dedicated-gpu`` default, where that applies

    def workload_gfx(self, defaults: bool) -> str | None:
        """The gfx of the GPU the workload gets, the defaults on or off: what the GPU x HIP rules judge."""
        return self.default_gfx if defaults else self.gfx

    def recorded(self) -> dict[str, str | None]:
        """The host as a recorded run names it (the results store's ``host``, whose ``gfx`` files the
        run): one answer for a run's record, ``record_result``, ``list_releases`` and the doctor's."""
        return self.quick.fingerprint()

    def same_os(self, plan_os: str) -> bool:
        """Does a workload of ``plan_os`` run here (its GPUs, libraries and variables are this host's)?"""
        return _host_os(self.platform) == plan_os


def read_host(env: Mapping[str, str], platform: str | None = None) -> HostRead:
    """The host's facts for a run in ``env``, read once: the HIP install, the AMD GPUs and where they were
    read (the KFD topology, the registry). The gfx judged is the first GPU the user's choice (restated as
    plain indices where HIP's order is known: :func:`~zluda_runner.host.visibility.restated_env`;
    ``HIP_VISIBLE_DEVICES=-1`` hides every GPU, so none is judged) leaves visible, as
    ``HSA_OVERRIDE_GFX_VERSION`` presents it; with the defaults on, after the ``dedicated-gpu`` default's
    choice (:func:`gpu_choice_env`, the code the defaults run)."""
    plat = platform or sys.platform
    linux, fs = plat.startswith("linux"), HostFs(root_from_env(env.get(ROOT_ENV) or ""))
    nodes = kfd_gpu_nodes(fs) if linux else []
    agents = gpus_from_kfd(fs, nodes)
    windows = plat == "win32" and fs.root is None  # the registry (a fake root has none)
    gpus = host_gpus(nodes, agents) if linux else registry_gpus() if windows else ()
    source = None if not gpus else "KFD topology" if linux else REGISTRY

    def judged(choice: Mapping[str, str]) -> str | None:
        seen = restated_env(choice, len(gpus)) if gpus and source != REGISTRY else choice
        return judged_gfx(agents, seen, plat)

    chosen = gpu_choice_env(gpus, source, env, enabled=True, platform=plat)
    quick = quick_facts(env, fs.root, plat, agents)
    return HostRead(plat, fs, quick, gpus, source, judged(env), judged(chosen))


def gpu_choice_env(gpus: tuple[HostGpu, ...], source: str | None, env: Mapping[str, str], *,
                   enabled: bool, platform: str) -> dict[str, str]:
    """``env`` with the ``dedicated-gpu`` default's ``HIP_VISIBLE_DEVICES`` where that default applies to
    ``gpus`` (read from ``source``; :data:`REGISTRY` is not HIP's order, so it never chooses), else ``env``
    as is: the one decision :func:`read_host` and the doctor both follow."""
    if len(gpus) < 2:
        return dict(env)
    facts = DefaultsFacts(enabled=enabled, os=_host_os(platform), gpus=gpus, gpu_source=source,
                          gpu_order_known=source != REGISTRY, env=dict(env))
    chosen = [d for d in compute_defaults(facts) if d.name == DEDICATED_GPU]
    return {**env, **defaults_env(chosen)}


def without_miopen(looked: str, env: Mapping[str, str], *, enabled: bool, platform: str) -> AppliedDefault:
    """What a run of a torch workload on this host does where MIOpen was looked for (``looked``) and not
    found: ZLUDA's cuDNN, which runs on it, is not bound (:func:`~zluda_runner.plan.unbound.unbind`: an
    optional stand-in), and the ``cudnn-off`` default, as decided for the user's ``env`` and ``enabled``
    (``--no-defaults``), says whether torch's cuDNN is switched off: the one decision the plan and the
    doctor both follow."""
    facts = DefaultsFacts(enabled=enabled, os=_host_os(platform), python=True, miopen_looked=looked,
                          env=dict(env))
    return cudnn_off(facts, [no_miopen_reason(looked)])


def without_hipblaslt(env: Mapping[str, str], *, enabled: bool, platform: str) -> AppliedDefault:
    """What a run of a torch workload (from :data:`~zluda_runner.plan.defaults.ADDMM_LT_TORCH` on: the first
    that routes addmm through cuBLASLt) does on this host without hipBLASLt: ZLUDA's cuBLASLt, which runs
    on it, is not bound, and the ``addmm-lt-off`` default, as decided for the user's ``env`` and
    ``enabled``, says whether ``DISABLE_ADDMM_CUDA_LT=1`` is set: the one decision the plan and the doctor
    both follow."""
    facts = DefaultsFacts(enabled=enabled, os=_host_os(platform), python=True, torch_version=ADDMM_LT_TORCH,
                          unbound={"cublasLt": "cuBLASLt stand-in"}, env=dict(env))
    decided = addmm_lt_off(facts)
    assert decided is not None  # a torch from ADDMM_LT_TORCH on, no cuBLASLt served: it always concerns it
    return decided


def gather_facts(plan: ShimPlan, host: HostRead, env: Mapping[str, str], *, enabled: bool,
                 manifest: Manifest | None) -> DefaultsFacts:
    """The facts for ``plan`` on ``host`` (``env``: the user's environment for the launch; ``manifest``: the
    one in use, for the release's device identity)."""
    same_host = host.same_os(plan.os)
    # MIOpen where the launch's loader takes it from (the finder the dependency checks and the doctor read)
    miopen = find_library(library_name("miopen", host.platform), env, host.platform, fs=host.fs,
                          path_prepend=plan.path_prepend) if same_host else None
    gpus, source = (host.gpus, host.gpu_source) if same_host else ((), None)
    served, files, unbound = _served(plan)
    tgt = plan.target
    rules: dict[str, str] = {}
    if manifest is not None and same_host:  # the release stack only with a manifest (none for --zluda-dir)
        from zluda_runner.release.gpurules import gpu_defaults

        rules = gpu_defaults(manifest.gpu_hip_rules, _gfxs(host, enabled), plan.os)
    return DefaultsFacts(
        enabled=enabled, os=plan.os, python=bool(tgt.python or tgt.torch_path),
        startup_hook=plan.startup_hook is not None, torch_version=tgt.torch,
        release_id=plan.release.id if plan.release else None,
        flavour=plan.release.flavour if plan.release else None,
        served=served, served_files=files, unbound=unbound, miopen=miopen.path if miopen else None,
        miopen_looked=miopen.searched() if miopen else None, gpus=gpus,
        gpu_source=source, gpu_order_known=source != REGISTRY,
        identity=_identity(plan, manifest), env=dict(env),
        gpu_defaults=rules,
        unpinned=_unpinned(plan, manifest),
    )


def _gfxs(host: HostRead, enabled: bool) -> tuple[str, ...]:
    """The workload's GPU, else (HIP's order not known: the Windows registry) every GPU the host lists."""
    gfx = host.workload_gfx(enabled)
    return (gfx,) if gfx else tuple(g.gfx for g in host.gpus if g.gfx)


def with_defaults(plan: ShimPlan, host: HostRead, env: Mapping[str, str], *, enabled: bool,
                  manifest: Manifest | None, facts: DefaultsFacts | None = None) -> ShimPlan:
    """``plan`` with the defaults for ``host`` and ``env`` (:func:`gather_facts`; ``facts``: gathered
    already)."""
    facts = facts or gather_facts(plan, host, env, enabled=enabled, manifest=manifest)
    plan = plan_with_defaults(plan, compute_defaults(facts))
    added = [w for w in (switch_off_warning(env), *visibility_warnings(plan.os, host, env))
             if w is not None and w not in plan.warnings]
    return replace(plan, warnings=(*plan.warnings, *added)) if added else plan


def visibility_warnings(plan_os: str, host: HostRead, env: Mapping[str, str]) -> tuple[str, ...]:
    """What is wrong with the user's ``ROCR_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES`` /
    ``CUDA_VISIBLE_DEVICES`` for a workload of ``plan_os`` run on ``host``, read as ROCm reads them
    (:func:`~zluda_runner.host.visibility.gpu_visibility`): no GPU left visible (``-1``, ``abc``, an
    index past the last GPU), a list cut short, a UUID zluda-run cannot follow. Nothing for a plan of
    another OS (its workload does not run here); the host's GPU count where HIP's order is known."""
    if not host.same_os(plan_os):
        return ()
    source = host.gpu_source
    count = len(host.gpus) if source is not None and source != REGISTRY else None
    return gpu_visibility(env, count).warnings
