"""A fake amdgpu sysfs tree (and the KFD topology naming its GPUs) under a test's root.

Shapes from the Linux kernel (torvalds/linux, v6.8):
- drivers/gpu/drm/amd/pm/amdgpu_pm.c: ``gpu_busy_percent`` ("%d\\n"), hwmon ``power1_average`` /
  ``power1_input`` (µW, "%u\\n"), ``temp1_input`` (m°C); Documentation/gpu/amdgpu/thermal.rst;
- drivers/gpu/drm/amd/amdgpu/amdgpu_vram_mgr.c: ``mem_info_vram_used`` / ``_total`` (bytes, "%llu\\n");
  Documentation/gpu/amdgpu/driver-misc.rst;
- drivers/gpu/drm/amd/amdkfd/kfd_topology.c: node ``properties`` lines ``name value``, among them
  ``simd_count``, ``gfx_target_version``, ``location_id`` (bus << 8 | device << 3 | function),
  ``domain`` and ``drm_render_minor``;
- a card's ``device/drm/`` holds its ``cardN`` and ``renderD<minor>`` entries; ``device/uevent``
  has ``DRIVER=amdgpu`` and ``PCI_SLOT_NAME=0000:03:00.0``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

GIB = 1024**3


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` whole (a reader sees the old value or the new one, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="ascii")
    os.replace(tmp, path)


@dataclass(frozen=True)
class FakeCard:
    card: int  # cardN
    render_minor: int
    bus: int  # PCI bus: the slot is 0000:<bus>:00.0
    vram_total: int = 16 * GIB
    name: str = "AMD Radeon RX 7900 XTX"
    gfx_target_version: int = 110000
    power_file: str = "power1_average"  # newer kernels/GPUs: power1_input
    hwmon: int = 0


def card_device(root: Path, card: int) -> Path:
    return root / f"sys/class/drm/card{card}/device"


def hwmon_dir(root: Path, card: FakeCard) -> Path:
    return card_device(root, card.card) / f"hwmon/hwmon{card.hwmon}"


def add_card(root: Path, card: FakeCard, *, busy: int = 0, vram_used: int = GIB, power_uw: int = 20_000_000,
             temp_mc: int = 45_000) -> None:
    device = card_device(root, card.card)
    slot = f"0000:{card.bus:02x}:00.0"
    write_atomic(device / "uevent", f"DRIVER=amdgpu\nPCI_CLASS=30000\nPCI_SLOT_NAME={slot}\n")
    (device / "drm" / f"card{card.card}").mkdir(parents=True, exist_ok=True)
    (device / "drm" / f"renderD{card.render_minor}").mkdir(parents=True, exist_ok=True)
    write_atomic(device / "mem_info_vram_total", f"{card.vram_total}\n")
    set_values(root, card, busy=busy, vram_used=vram_used, power_uw=power_uw, temp_mc=temp_mc)
    (root / f"sys/class/drm/card{card.card}-DP-1").mkdir(parents=True, exist_ok=True)  # a connector


def set_values(root: Path, card: FakeCard, *, busy: int | None = None, vram_used: int | None = None,
               power_uw: int | None = None, temp_mc: int | None = None) -> None:
    device = card_device(root, card.card)
    if busy is not None:
        write_atomic(device / "gpu_busy_percent", f"{busy}\n")
    if vram_used is not None:
        write_atomic(device / "mem_info_vram_used", f"{vram_used}\n")
    if power_uw is not None:
        write_atomic(hwmon_dir(root, card) / card.power_file, f"{power_uw}\n")
    if temp_mc is not None:
        write_atomic(hwmon_dir(root, card) / "temp1_input", f"{temp_mc}\n")


def add_kfd(root: Path, cards: list[FakeCard]) -> None:
    """The KFD topology: node 0 the CPU, then one node per card, in the order given (HIP's order)."""
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    write_atomic(nodes / "0/properties", "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n")
    write_atomic(nodes / "0/name", "\n")
    for i, card in enumerate(cards, start=1):
        props = (
            f"cpu_cores_count 0\nsimd_count 192\nsimd_per_cu 2\n"
            f"gfx_target_version {card.gfx_target_version}\n"
            f"vendor_id 4098\nlocation_id {card.bus << 8}\ndomain 0\ndrm_render_minor {card.render_minor}\n"
        )
        write_atomic(nodes / f"{i}/properties", props)
        write_atomic(nodes / f"{i}/name", f"{card.name}\n")


def one_gpu_host(root: Path, **values: int) -> FakeCard:
    card = FakeCard(card=1, render_minor=128, bus=3)
    add_card(root, card, **values)
    add_kfd(root, [card])
    return card
