"""The host as a run sees it, read once (:func:`read_host`): the quick facts (the HIP found, problems), the
AMD GPUs in HIP's order where known and the gfx the manifest's GPU x HIP rules judge, the defaults off and
on. Apart from the defaults' other facts (:mod:`zluda_runner.plan.defaults_facts`), so that what only
judges the host (``releases``, a run's release) imports no plan model, loader or binary reader.

Only small files are read (sysfs properties, a folder listing); under ``ZLUDA_RUNNER_ROOT`` the host is a
fake tree, as for every host reader.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from zluda_runner.core.units import format_bytes
from zluda_runner.host.fs import ROOT_ENV, HostFs, root_from_env
from zluda_runner.host.gpus import gpus_from_kfd, kfd_gpu_nodes
from zluda_runner.host.model import GpuAgent, HostGpu
from zluda_runner.host.quick import QuickFacts, judged_gfx, quick_facts
from zluda_runner.host.visibility import restated_env


def platform_os(platform: str) -> str:
    """The OS a ``sys.platform`` value names, as plans and releases name it (``linux``, ``windows``)."""
    return "windows" if platform == "win32" else "linux" if platform.startswith("linux") else platform


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
        return platform_os(self.platform) == plan_os


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
    from zluda_runner.plan.defaults import DEDICATED_GPU, DefaultsFacts, compute_defaults, defaults_env

    facts = DefaultsFacts(enabled=enabled, os=platform_os(platform), gpus=gpus, gpu_source=source,
                          gpu_order_known=source != REGISTRY, env=dict(env))
    chosen = [d for d in compute_defaults(facts) if d.name == DEDICATED_GPU]
    return {**env, **defaults_env(chosen)}
