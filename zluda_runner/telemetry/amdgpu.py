"""The amdgpu driver's sysfs files, read under an optional fake root.

Formats (Linux kernel, Documentation/gpu/amdgpu/driver-misc.rst and thermal.rst, which include the
kernel-doc of drivers/gpu/drm/amd/pm/amdgpu_pm.c and drivers/gpu/drm/amd/amdgpu/amdgpu_vram_mgr.c):

- ``device/gpu_busy_percent``: how busy the GPU is, an integer percentage (``%d\\n``);
- ``device/mem_info_vram_used`` / ``mem_info_vram_total``: bytes (``%llu\\n``);
- ``device/hwmon/hwmon*/power1_average``: average power used by the SoC in microwatts (newer kernels
  and some GPUs have ``power1_input``, the instantaneous power, instead);
- ``device/hwmon/hwmon*/temp1_input``: the on-die GPU temperature in millidegrees Celsius.

Which card: the KFD topology lists the GPUs in the order HIP numbers them (host/gpus.py); each GPU
node's ``drm_render_minor`` names its ``renderD<minor>``, found under the card's ``device/drm/``
(or, failing that, its PCI ``location_id`` matches the card's ``PCI_SLOT_NAME``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from zluda_runner.host.fs import HostFs, read_small
from zluda_runner.host.gpus import KFD_NODES, visible_gpus
from zluda_runner.host.model import GpuAgent
from zluda_runner.telemetry.model import GpuReading, NoTelemetry

DRM = "/sys/class/drm"
READ_LIMIT = 4096  # a sysfs attribute is at most one page; these hold one number
MAX_CARDS = 64


# the ranges of the kernel's formats: a value outside its attribute's is garbage, not a reading
U64 = (0, 2**64 - 1)  # "%llu": mem_info_vram_used / _total
U32 = (0, 2**32 - 1)  # "%u": power1_average / power1_input (µW)
S32 = (-(2**31), 2**31 - 1)  # "%d": temp1_input (m°C), gpu_busy_percent
PERCENT = (0, 100)


def read_int(path: Path, bounds: tuple[int, int] = S32) -> int | None:
    """The one integer a sysfs attribute holds; None for a missing, empty or garbled file, or one
    outside ``bounds`` (the range of the attribute's format)."""
    text = read_small(path, READ_LIMIT)
    if text is None:
        return None
    word = text.strip()
    if not re.fullmatch(r"-?[0-9]{1,20}", word):
        return None
    value = int(word)
    return value if bounds[0] <= value <= bounds[1] else None


def _properties(text: str) -> dict[str, int]:
    props: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"-?[0-9]{1,20}", parts[1]):
            props[parts[0]] = int(parts[1])
    return props


@dataclass(frozen=True)
class AmdCard:
    """One amdgpu card of ``/sys/class/drm``."""

    name: str  # "card1"
    device: Path  # its device folder (mapped under the root)
    render_minor: int | None
    pci_slot: str | None  # "0000:03:00.0"


def amdgpu_cards(fs: HostFs) -> list[AmdCard]:
    """The cards the amdgpu driver drives, in card-number order."""
    cards: list[AmdCard] = []
    entries = [p for p in fs.glob(DRM, "card*") if re.fullmatch(r"card\d{1,4}", p.name)]
    for entry in sorted(entries, key=lambda p: int(p.name[4:]))[:MAX_CARDS]:
        device = entry / "device"
        uevent = read_small(device / "uevent", READ_LIMIT) or ""
        fields = dict(line.partition("=")[::2] for line in uevent.splitlines())
        is_amdgpu = fields.get("DRIVER") == "amdgpu" or (device / "mem_info_vram_total").exists()
        if not is_amdgpu:
            continue
        minors = [int(m.name[7:]) for m in _glob(device / "drm", "renderD*") if m.name[7:].isdigit()]
        cards.append(AmdCard(entry.name, device, minors[0] if minors else None, fields.get("PCI_SLOT_NAME")))
    return cards


def _glob(folder: Path, pattern: str) -> list[Path]:
    try:
        return sorted(folder.glob(pattern)) if folder.is_dir() else []
    except OSError:
        return []


@dataclass(frozen=True)
class KfdGpu:
    agent: GpuAgent
    render_minor: int | None
    pci_slot: str | None


def kfd_gpus(fs: HostFs) -> list[KfdGpu]:
    """The GPU nodes of the KFD topology in HIP's order (the same filter as host/gpus.py)."""
    nodes = [p for p in fs.glob(KFD_NODES, "*") if p.name.isdigit()]
    found: list[KfdGpu] = []
    for node in sorted(nodes, key=lambda p: int(p.name)):
        props = _properties(read_small(node / "properties") or "")
        if props.get("simd_count", 0) <= 0 or props.get("gfx_target_version", 0) <= 0:
            continue  # a CPU node
        name = (read_small(node / "name", READ_LIMIT) or "").strip()
        location = props.get("location_id")
        slot = None
        if location is not None:
            bus, dev, fn = location >> 8, (location >> 3) & 0x1F, location & 0x7
            slot = f"{props.get('domain', 0):04x}:{bus:02x}:{dev:02x}.{fn:x}"
        agent = GpuAgent(index=len(found), name=name, gfx=None, source="kfd")
        found.append(KfdGpu(agent, props.get("drm_render_minor"), slot))
    return found


def _card_of(gpu: KfdGpu, cards: list[AmdCard]) -> AmdCard | None:
    for card in cards:
        if gpu.render_minor is not None and card.render_minor == gpu.render_minor:
            return card
    for card in cards:
        if gpu.pci_slot is not None and card.pci_slot == gpu.pci_slot:
            return card
    return None


def choose_card(fs: HostFs, env: Mapping[str, str]) -> tuple[AmdCard, str] | NoTelemetry:
    """The workload's card (HIP device 0 after ``ROCR_VISIBLE_DEVICES``/``HIP_VISIBLE_DEVICES``) and
    how it was chosen, in words."""
    cards = amdgpu_cards(fs)
    if not cards:
        return NoTelemetry(
            "no amdgpu card in /sys/class/drm (no AMD GPU, or not the amdgpu driver): "
            "see `zluda-run doctor`"
        )
    selection = env.get("HIP_VISIBLE_DEVICES") or env.get("CUDA_VISIBLE_DEVICES")
    setting = f"HIP_VISIBLE_DEVICES={selection}" if selection else "HIP_VISIBLE_DEVICES unset"
    gpus = kfd_gpus(fs)
    if not gpus:
        card = cards[0]
        note = (f"the first amdgpu card of {len(cards)} (no KFD topology to map HIP's numbering; {setting})"
                if len(cards) > 1 else "")
        return card, note
    visible = visible_gpus([g.agent for g in gpus], env)
    if not visible:
        return NoTelemetry(f"the GPU settings hide every GPU ({setting}): nothing to sample")
    target = gpus[visible[0].index]
    matched = _card_of(target, cards)
    if matched is None:
        return NoTelemetry(
            f"HIP device 0 (KFD GPU {target.agent.index}) matches no amdgpu card in /sys/class/drm"
        )
    note = f"HIP device 0, KFD GPU {target.agent.index} of {len(gpus)} ({setting})" if len(gpus) > 1 else ""
    return matched, note


class AmdgpuSysfs:
    """A :class:`~zluda_runner.telemetry.source.TelemetrySource` over one card's sysfs files."""

    backend = "amdgpu-sysfs"

    def __init__(self, card: AmdCard, how: str, name: str = "") -> None:
        self._card = card
        self.device = card.name + (f" ({name})" if name else "") + (f": {how}" if how else "")
        hwmons = _glob(card.device / "hwmon", "hwmon*")
        self._hwmon = hwmons[0] if hwmons else None

    def vram_total(self) -> int | None:
        total = read_int(self._card.device / "mem_info_vram_total", U64)
        return total or None  # 0: no VRAM to speak of

    def read(self) -> GpuReading:
        device = self._card.device
        power = temp = None
        if self._hwmon is not None:
            micro_w = read_int(self._hwmon / "power1_average", U32)
            if micro_w is None:
                micro_w = read_int(self._hwmon / "power1_input", U32)
            milli_c = read_int(self._hwmon / "temp1_input", S32)
            power = micro_w / 1e6 if micro_w is not None else None
            temp = milli_c / 1000 if milli_c is not None else None
        busy = read_int(device / "gpu_busy_percent", PERCENT)
        return GpuReading(
            busy_percent=float(busy) if busy is not None else None,
            vram_used=read_int(device / "mem_info_vram_used", U64),
            power_w=power,
            temp_c=temp,
        )

    def close(self) -> None:
        return None


def open_amdgpu(*, root: Path | None, env: Mapping[str, str]) -> AmdgpuSysfs | NoTelemetry:
    fs = HostFs(root)
    chosen = choose_card(fs, env)
    if isinstance(chosen, NoTelemetry):
        return chosen
    card, how = chosen
    name = ""
    for gpu in kfd_gpus(fs):
        if _card_of(gpu, [card]) is not None:
            name = gpu.agent.name
            break
    return AmdgpuSysfs(card, how, name)
