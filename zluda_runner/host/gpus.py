"""Which AMD GPUs the host has, from four back ends, and which of them HIP will show.

In order of preference: the HIP runtime itself (:mod:`.hip`, in a child), the KFD
topology in sysfs (Linux), ``rocminfo`` / ``rocm_agent_enumerator`` output, and the
Windows registry (no gfx there).  :func:`discover_gpus` asks them in that order and
says what each one answered when none found a GPU.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.host.fs import HostFs
from zluda_runner.host.gfx import gfx_from_target_version, hsa_version_to_gfx, looks_integrated, normalize_gfx
from zluda_runner.host.model import GpuAgent, RocmInstall

if TYPE_CHECKING:  # the HIP binding (and the tools' runner) only when the runtime is queried
    from zluda_runner.host.hip import HipInfo
    from zluda_runner.host.tools import ToolRunner

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"

HipQuery = Callable[[], "HipInfo"]


def gpus_from_hip(info: HipInfo) -> list[GpuAgent]:
    return [
        GpuAgent(
            index=d.index,
            name=d.name,
            gfx=d.gfx,
            source="hip",
            memory_bytes=d.total_memory_bytes,
            integrated=looks_integrated(d.gfx, d.name),
        )
        for d in info.devices
    ]


def _properties(text: str) -> dict[str, int]:
    props: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            props[parts[0]] = int(parts[1])
    return props


def kfd_gpu_nodes(fs: HostFs) -> list[tuple[Path, dict[str, int]]]:
    """(folder, properties) of the KFD topology's GPU nodes (a CPU node has no SIMD), in node order (the
    order ROCr enumerates them); each folder a host path (read through ``fs``)."""
    nodes = sorted((Path(f"{KFD_NODES}/{n}") for n in fs.names(KFD_NODES) if n.isdigit()),
                   key=lambda p: int(p.name))
    found = []
    for node in nodes:
        props = _properties(fs.read_small(node / "properties") or "")
        if props.get("simd_count", 0) > 0 and gfx_from_target_version(props.get("gfx_target_version", 0)):
            found.append((node, props))
    return found


def gpus_from_kfd(fs: HostFs, nodes: list[tuple[Path, dict[str, int]]] | None = None) -> list[GpuAgent]:
    """GPU agents of the KFD topology (``nodes``: its GPU nodes where read already), in node order."""
    agents: list[GpuAgent] = []
    for node, props in kfd_gpu_nodes(fs) if nodes is None else nodes:
        simd = props["simd_count"]
        gfx = gfx_from_target_version(props["gfx_target_version"])
        name = (fs.read_small(node / "name") or "").strip()
        per_cu = props.get("simd_per_cu", 0)
        memory = _kfd_local_memory(fs, node)
        agents.append(
            GpuAgent(
                index=len(agents),
                name=name,
                gfx=gfx,
                source="kfd",
                memory_bytes=memory or None,
                # an APU's node has no VRAM bank (its memory is carved out of system RAM)
                integrated=looks_integrated(gfx, None, props.get("cpu_cores_count", 0)) or memory == 0,
                compute_units=simd // per_cu if per_cu else None,
            )
        )
    return agents


def _kfd_local_memory(fs: HostFs, node: Path) -> int | None:
    """Size of the node's VRAM banks (heap_type 1 = FB public, 2 = FB private); 0 for an APU,
    None when the node lists no memory banks at all (no ``mem_banks/N/properties``)."""
    banks = [node / "mem_banks" / n / "properties" for n in fs.names(node / "mem_banks")]
    banks = [b for b in banks if fs.exists(b)]
    if not banks:
        return None
    total = 0
    for bank in banks:
        props = _properties(fs.read_small(bank) or "")
        if props.get("heap_type") in (1, 2):
            total += props.get("size_in_bytes", 0)
    return total


def parse_rocminfo(text: str) -> list[GpuAgent]:
    """GPU agents from ``rocminfo`` output (blocks with ``Device Type: GPU``)."""
    agents: list[GpuAgent] = []
    for block in re.split(r"\n\*+\s*\nAgent \d+\s*\n\*+", text)[1:]:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.strip().partition(":")
            if sep and key not in fields:
                fields[key.strip()] = value.strip()
        if fields.get("Device Type") != "GPU":
            continue
        gfx = normalize_gfx(fields.get("Name"))
        name = fields.get("Marketing Name") or fields.get("Name", "")
        agents.append(
            GpuAgent(
                index=len(agents),
                name=name,
                gfx=gfx,
                source="rocminfo",
                integrated=looks_integrated(gfx, name),
            )
        )
    return agents


def parse_agent_enumerator(text: str) -> list[GpuAgent]:
    """``rocm_agent_enumerator`` prints one gfx per agent; ``gfx000`` is the CPU."""
    agents: list[GpuAgent] = []
    for line in text.split():
        gfx = normalize_gfx(line)
        if gfx and gfx != "gfx000":
            agents.append(
                GpuAgent(
                    index=len(agents),
                    name="",
                    gfx=gfx,
                    source="rocm_agent_enumerator",
                    integrated=looks_integrated(gfx),
                )
            )
    return agents


def windows_registry_gpus() -> list[GpuAgent]:
    """AMD display adapters from the Windows registry (no gfx there; HIP is preferred): the display class's
    numbered subkeys, read as an observation (:func:`zluda_runner.core.observe.registry_values`) that a
    memo makes again."""
    if sys.platform != "win32":
        return []
    from zluda_runner.core import observe

    key_path = r"SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}"
    names = ("ProviderName", "DriverDesc", "HardwareInformation.qwMemorySize", "DriverVersion")
    agents: list[GpuAgent] = []
    for sub, values in observe.registry_values(key_path, names) or []:
        provider, desc, memory, driver = values
        if not str(sub).isdigit() or not isinstance(provider, str) or not isinstance(desc, str):
            continue
        if "advanced micro devices" in provider.lower() or "amd" in desc.lower():
            agents.append(GpuAgent(index=len(agents), name=desc, gfx=None, source="registry",
                                   memory_bytes=memory if isinstance(memory, int) else None,
                                   integrated=looks_integrated(None, desc),
                                   driver_version=None if driver is None else str(driver)))
    return agents


# The Linux tools asked for the GPUs where HIP and the KFD topology did not say; Windows has neither
# (its HIP SDK ships no rocminfo): there HIP and the display adapters in the registry are asked.
LINUX_TOOLS = ("rocminfo", "rocm_agent_enumerator")


@dataclass
class GpuDiscovery:
    """What :func:`discover_gpus` found: the agents, the back end that listed them, HIP's own answer
    (None when HIP was not asked), and what each back end asked said when none found a GPU
    (``tried``: (its id: hip, kfd, rocminfo, rocm_agent_enumerator, registry; what it said))."""

    gpus: list[GpuAgent] = field(default_factory=list)
    source: str | None = None
    hip: HipInfo | None = None
    tried: list[tuple[str, str]] = field(default_factory=list)

    def tried_text(self) -> list[str]:
        """``tried`` as the doctor words it (``rocminfo: not found``; HIP's and the KFD's by name)."""
        label = {"hip": "HIP", "kfd": "KFD topology"}
        return [f"{label.get(source, source)}: {said}" for source, said in self.tried]


def discover_gpus(
    fs: HostFs,
    platform: str,
    *,
    hip_query: HipQuery | None,
    tools: ToolRunner | None,
    rocm: RocmInstall | None,
    use_registry: bool,
) -> GpuDiscovery:
    """Ask the back ends of ``platform`` in order of preference; the first that lists a GPU wins. Linux: HIP,
    the KFD topology, ``rocminfo``, ``rocm_agent_enumerator``; Windows: HIP, the registry's display
    adapters (the Linux tools are not asked there)."""
    found = GpuDiscovery()
    if hip_query is not None:
        found.hip = hip_query()
        if found.hip.devices:
            found.gpus, found.source = gpus_from_hip(found.hip), "hip"
            return found
        found.tried.append(("hip", found.hip.error or "no devices"))
    if platform.startswith("linux"):
        kfd = gpus_from_kfd(fs)
        if kfd:
            found.gpus, found.source = kfd, "kfd"
            return found
        found.tried.append(("kfd", "no GPU node"))
    if tools is not None and platform != "win32":
        rocm_bin = f"{rocm.path}/bin" if rocm else None
        parsers: dict[str, Callable[[str], list[GpuAgent]]] = {
            "rocminfo": parse_rocminfo, "rocm_agent_enumerator": parse_agent_enumerator}
        import shutil  # (only where a tool is looked for: shutil pulls in the archive modules)

        for tool in LINUX_TOOLS:
            exe = shutil.which(tool, path=rocm_bin) if rocm_bin else None
            exe = exe or shutil.which(tool)
            if exe is None:
                found.tried.append((tool, "not found"))
                continue
            out = tools([exe])
            agents = parsers[tool](out) if out else []
            if agents:
                found.gpus, found.source = agents, tool
                return found
            found.tried.append((tool, "no GPU agent"))
    if platform == "win32" and use_registry:
        agents = windows_registry_gpus()
        if agents:
            found.gpus, found.source = agents, "registry"
            return found
        found.tried.append(("registry", "no AMD display adapter"))
    return found


def visible_gpus(gpus: list[GpuAgent], env: Mapping[str, str]) -> list[GpuAgent]:
    """The devices HIP (and ZLUDA) will show, in order, by the user's ``ROCR_VISIBLE_DEVICES`` /
    ``HIP_VISIBLE_DEVICES`` / ``CUDA_VISIBLE_DEVICES`` read as ROCm reads them
    (:mod:`zluda_runner.host.visibility`: ``-1``, ``abc`` or an index past the last GPU ends the list and
    hides every GPU after it). A UUID entry, which is not matched to a GPU here, leaves the order as
    it is (what :func:`~zluda_runner.host.visibility.gpu_visibility` warns of)."""
    from zluda_runner.host.visibility import gpu_visibility

    seen = gpu_visibility(env, len(gpus)).visible
    return list(gpus) if seen is None else [gpus[i] for i in seen]


def target_gpu(gpus: list[GpuAgent], env: Mapping[str, str]) -> GpuAgent | None:
    """The device HIP (and ZLUDA) will use as device 0; None when the settings hide every GPU."""
    visible = visible_gpus(gpus, env)
    return visible[0] if visible else None


def effective_gfx(gpu: GpuAgent, env: Mapping[str, str], platform: str) -> str | None:
    override = env.get("HSA_OVERRIDE_GFX_VERSION")
    if override and platform.startswith("linux"):
        return hsa_version_to_gfx(override) or gpu.gfx
    return gpu.gfx
