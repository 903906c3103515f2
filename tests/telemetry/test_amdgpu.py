"""The amdgpu sysfs back end: the files' formats, a bad file, and which card is the workload's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.golden import assert_golden
from tests.telemetry.fake_sysfs import (
    GIB,
    FakeCard,
    add_card,
    add_kfd,
    card_device,
    hwmon_dir,
    one_gpu_host,
    write_atomic,
)
from zluda_runner.telemetry.amdgpu import AmdgpuSysfs, open_amdgpu
from zluda_runner.telemetry.model import GpuReading, NoTelemetry
from zluda_runner.telemetry.sampler import open_source


def _open(root: Path, env: dict[str, str] | None = None) -> AmdgpuSysfs:
    source = open_amdgpu(root=root, env=env or {})
    assert isinstance(source, AmdgpuSysfs), source
    return source


def test_one_reading_in_the_units_of_the_record(tmp_path: Path) -> None:
    one_gpu_host(tmp_path, busy=37, vram_used=3 * GIB, power_uw=151_250_000, temp_mc=61_500)
    source = _open(tmp_path)
    assert source.read() == GpuReading(busy_percent=37.0, vram_used=3 * GIB, power_w=151.25, temp_c=61.5)
    assert source.vram_total() == 16 * GIB
    assert source.backend == "amdgpu-sysfs"
    assert source.device == "card1 (AMD Radeon RX 7900 XTX)"  # the only GPU: no doubt to tell


def test_power1_input_where_there_is_no_power1_average(tmp_path: Path) -> None:
    card = FakeCard(card=0, render_minor=128, bus=3, power_file="power1_input")
    add_card(tmp_path, card, power_uw=88_000_000)
    add_kfd(tmp_path, [card])
    assert _open(tmp_path).read().power_w == 88.0


def test_a_missing_or_garbled_file_is_none_not_a_crash(tmp_path: Path) -> None:
    card = one_gpu_host(tmp_path)
    device = card_device(tmp_path, card.card)
    write_atomic(device / "gpu_busy_percent", "busy\n")
    write_atomic(device / "mem_info_vram_used", "9" * 100_000)  # bounded read: not a number
    (hwmon_dir(tmp_path, card) / "power1_average").unlink()
    write_atomic(hwmon_dir(tmp_path, card) / "temp1_input", "")
    assert _open(tmp_path).read() == GpuReading()
    write_atomic(device / "gpu_busy_percent", "250\n")  # out of range
    assert _open(tmp_path).read().busy_percent is None


@pytest.mark.parametrize(("file", "text"), [
    ("mem_info_vram_used", "-1073741824"),  # "%llu": never negative
    ("mem_info_vram_used", "99999999999999999999"),  # beyond 64 bits
    ("power1_average", "-20000000"),  # "%u" µW
    ("power1_average", "99999999999999"),  # beyond 32 bits: 100 MW
    ("temp1_input", "99999999999999"),  # "%d" m°C, beyond 32 bits
    ("mem_info_vram_total", "-5"),
    ("mem_info_vram_total", "0"),  # no VRAM: no total to show a peak against
])
def test_a_number_outside_its_kernel_format_is_none_not_a_reading(tmp_path: Path, file: str,
                                                                   text: str) -> None:
    """Garbage shown as VRAM -1.0 GiB, power -20 W or 1e14 C (and judged: VRAM "grew" from it) was worse
    than no reading: each attribute's value must fit the format the kernel prints it with."""
    card = one_gpu_host(tmp_path, busy=5, vram_used=GIB, power_uw=20_000_000, temp_mc=45_000)
    hwmon = file.startswith(("power", "temp"))
    folder = hwmon_dir(tmp_path, card) if hwmon else card_device(tmp_path, card.card)
    write_atomic(folder / file, text + "\n")
    source = _open(tmp_path)
    want = {"mem_info_vram_used": "vram_used", "power1_average": "power_w", "temp1_input": "temp_c"}
    reading, total = source.read(), source.vram_total()
    if file == "mem_info_vram_total":
        assert total is None and reading.vram_used == GIB
    else:
        assert getattr(reading, want[file]) is None and total == 16 * GIB
    assert reading.busy_percent == 5.0  # the other files are still read



@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_or_another_script_s_digits_is_none_never_waited_on(tmp_path: Path) -> None:
    card = one_gpu_host(tmp_path, busy=5)
    device = card_device(tmp_path, card.card)
    (device / "gpu_busy_percent").unlink()
    os.mkfifo(device / "gpu_busy_percent")  # no writer: an unbounded open would wait forever
    # Arabic-Indic "34": str.isdigit and int() take it, a sysfs number never is
    (device / "mem_info_vram_used").write_text("\u0663\u0664\n", encoding="utf-8")
    reading = _open(tmp_path).read()
    assert reading.busy_percent is None
    assert reading.vram_used is None
    assert reading.temp_c is not None  # the other files are still read

def test_no_hwmon_folder_leaves_power_and_temperature_unread(tmp_path: Path) -> None:
    card = one_gpu_host(tmp_path, busy=5)
    for entry in hwmon_dir(tmp_path, card).iterdir():
        entry.unlink()
    hwmon_dir(tmp_path, card).rmdir()
    reading = _open(tmp_path).read()
    assert (reading.busy_percent, reading.power_w, reading.temp_c) == (5.0, None, None)


def _two_gpus(root: Path) -> tuple[FakeCard, FakeCard]:
    """HIP's order (KFD) is the reverse of the card numbers: the 7600 is HIP device 0."""
    igpu_like = FakeCard(card=1, render_minor=128, bus=0x10, name="AMD Radeon RX 7900 XTX")
    second = FakeCard(card=2, render_minor=129, bus=0x03, name="AMD Radeon RX 7600", vram_total=8 * GIB)
    write_atomic(root / "sys/class/drm/card0/device/uevent", "DRIVER=simpledrm\n")  # not amdgpu
    add_card(root, igpu_like, busy=11)
    add_card(root, second, busy=22)
    add_kfd(root, [second, igpu_like])
    return igpu_like, second


def test_the_workload_gpu_follows_hip_visible_devices_in_hip_order(tmp_path: Path) -> None:
    _two_gpus(tmp_path)
    default = _open(tmp_path)
    assert default.read().busy_percent == 22.0 and default.vram_total() == 8 * GIB
    assert default.device == (
        "card2 (AMD Radeon RX 7600): HIP device 0, KFD GPU 0 of 2 (HIP_VISIBLE_DEVICES unset)"
    )
    picked = _open(tmp_path, {"HIP_VISIBLE_DEVICES": "1"})
    assert picked.read().busy_percent == 11.0
    assert picked.device.endswith("KFD GPU 1 of 2 (HIP_VISIBLE_DEVICES=1)")


def test_a_card_found_by_its_pci_slot_when_no_render_node_is_listed(tmp_path: Path) -> None:
    first, second = _two_gpus(tmp_path)
    for card in (first, second):
        (card_device(tmp_path, card.card) / "drm" / f"renderD{card.render_minor}").rmdir()
    assert _open(tmp_path, {"HIP_VISIBLE_DEVICES": "1"}).read().busy_percent == 11.0


def test_without_kfd_the_first_amdgpu_card_and_the_doubt_said(tmp_path: Path) -> None:
    _two_gpus(tmp_path)
    for path in sorted((tmp_path / "sys/class/kfd").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    source = _open(tmp_path, {"HIP_VISIBLE_DEVICES": "1"})
    assert source.read().busy_percent == 11.0  # card1: the lowest-numbered amdgpu card
    assert_golden("amdgpu_no_kfd_topology", source.device + "\n")


def test_settings_that_hide_every_gpu_sample_nothing(tmp_path: Path) -> None:
    _two_gpus(tmp_path)
    found = open_amdgpu(root=tmp_path, env={"HIP_VISIBLE_DEVICES": "5"})
    assert isinstance(found, NoTelemetry) and "HIP_VISIBLE_DEVICES=5" in found.reason
    # ROCm's rule (host.visibility): -1 or a word ends the list at once; GPU 0 was sampled on 720a795
    for value in ("-1", "abc"):
        found = open_amdgpu(root=tmp_path, env={"HIP_VISIBLE_DEVICES": value})
        assert isinstance(found, NoTelemetry) and f"HIP_VISIBLE_DEVICES={value}" in found.reason


def test_no_amdgpu_card_says_why_and_where_to_look(tmp_path: Path) -> None:
    write_atomic(tmp_path / "sys/class/drm/card0/device/uevent", "DRIVER=i915\n")
    found = open_source(root=tmp_path, env={})
    assert isinstance(found, NoTelemetry)
    assert_golden("amdgpu_no_card", found.reason + "\n", tmp=tmp_path)  # where it looked, and the doctor
