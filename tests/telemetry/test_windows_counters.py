"""Windows GPU counters as data (what PDH hands back, turned into one adapter's figures) and the
choice of the workload's adapter: pure functions, checked here on any OS. Instance names as the
graphics kernel spells them (Performance Monitor, "GPU Engine" / "GPU Adapter Memory" objects;
e.g. ``pid_9524_luid_0x00000000_0x000095CA_phys_0_eng_0_engtype_3D``)."""

from __future__ import annotations

import math

from tests.golden import assert_golden
from zluda_runner.telemetry.model import NoTelemetry
from zluda_runner.telemetry.windows_adapters import Adapter, choose_adapter
from zluda_runner.telemetry.windows_counters import (
    adapter_busy,
    adapter_luids,
    adapter_memory,
    luid_key,
    parse_engines,
)

AMD = "0x00000000_0x0000D1B2"
INTEL = "0x00000000_0x0000A18D"

ENGINES = [
    (f"pid_4120_luid_{AMD}_phys_0_eng_0_engtype_3D", 12.5),
    (f"pid_7000_luid_{AMD}_phys_0_eng_0_engtype_3D", 30.0),  # two processes on one engine: summed
    (f"pid_7000_luid_{AMD}_phys_0_eng_1_engtype_Compute_0", 64.0),
    (f"pid_7000_luid_{AMD}_phys_0_eng_4_engtype_Copy", 8.0),
    (f"pid_300_luid_{INTEL}_phys_0_eng_0_engtype_3D", 99.0),  # another adapter
    ("_Total", 100.0),  # not an engine instance
]
MEMORY = [(f"luid_{AMD}_phys_0", 3.0 * 2**30), (f"luid_{INTEL}_phys_0", 2**28), ("garbage", 5.0)]


def test_busy_is_the_busiest_engine_summed_over_processes() -> None:
    engines = parse_engines(ENGINES)
    assert len(engines) == 5 and engines[2].engtype == "Compute_0" and engines[0].pid == 4120
    assert adapter_busy(engines, AMD) == 64.0
    assert adapter_busy(parse_engines([*ENGINES, (f"pid_1_luid_{AMD}_phys_0_eng_1_engtype_Compute_0", 50.0)]),
                        AMD) == 100.0  # capped
    assert adapter_busy(engines, "0x00000000_0x00000001") is None


def test_memory_and_the_adapters_listed() -> None:
    assert adapter_memory(MEMORY, AMD) == 3 * 2**30
    assert adapter_memory(MEMORY, "0x00000000_0x00000001") is None
    assert adapter_luids(MEMORY) == [AMD, INTEL]
    assert luid_key(0, 0xD1B2) == AMD and luid_key(-1, 1) == "0xFFFFFFFF_0x00000001"


def test_a_value_that_is_no_figure_is_no_reading() -> None:
    """PDH hands back doubles: ``int()`` of a NaN byte count raised in the sampling thread and again
    after the run (the report lost); a negative one showed as VRAM."""
    for bad in (math.nan, math.inf, -4096.0):
        assert adapter_memory([(f"luid_{AMD}_phys_0", bad), (f"luid_{AMD}_phys_1", 2**20)], AMD) is None
    engines = parse_engines([(f"pid_1_luid_{AMD}_phys_0_eng_0_engtype_3D", math.nan),
                             (f"pid_1_luid_{AMD}_phys_0_eng_1_engtype_Compute_0", 40.0)])
    assert adapter_busy(engines, AMD) == 40.0
    assert adapter_busy(engines[:1], AMD) is None


def test_lower_case_hex_in_a_name_still_matches() -> None:
    engines = parse_engines([("pid_1_luid_0x00000000_0x0000d1b2_phys_0_eng_0_engtype_3D", 40.0)])
    assert adapter_busy(engines, AMD) == 40.0


ADAPTERS = [
    Adapter(INTEL, "Intel(R) UHD Graphics 770", 0x8086, 128 * 2**20),
    Adapter(AMD, "AMD Radeon RX 7900 XTX", 0x1002, 24 * 2**30),
    Adapter("0x00000000_0x0000E000", "AMD Radeon RX 6600", 0x1002, 8 * 2**30),
    Adapter("0x00000000_0x00000F00", "Microsoft Basic Render Driver", 0x1414, 0, software=True),
]


def test_the_workload_adapter_is_an_amd_one_picked_by_hip_visible_devices() -> None:
    which = "AMD Radeon RX 7900 XTX: AMD adapter 0 of 2 in DXGI's order (HIP_VISIBLE_DEVICES unset)"
    assert choose_adapter(ADAPTERS, [], {}) == (AMD, which, 24 * 2**30)
    luid, device, total = choose_adapter(ADAPTERS, [], {"HIP_VISIBLE_DEVICES": "1"})  # type: ignore[misc]
    assert (luid, total) == ("0x00000000_0x0000E000", 8 * 2**30) and device.startswith("AMD Radeon RX 6600")
    assert choose_adapter(ADAPTERS[1:2], [], {}) == (AMD, "AMD Radeon RX 7900 XTX", 24 * 2**30)
    hidden = choose_adapter(ADAPTERS, [], {"HIP_VISIBLE_DEVICES": "7"})
    assert isinstance(hidden, NoTelemetry)
    assert_golden("windows_counters_hidden", hidden.reason + "\n")


def test_without_an_amd_adapter_or_without_dxgi_the_doubt_is_said() -> None:
    luid, device, _ = choose_adapter(ADAPTERS[:1], [], {})  # type: ignore[misc]
    assert luid == INTEL
    assert_golden("windows_counters_not_amd", device + "\n")
    assert choose_adapter([], [AMD, INTEL], {}) == (
        AMD, f"adapter {AMD} (the first of 2 the counters list; DXGI could not tell which is AMD)", None
    )
    assert isinstance(choose_adapter([], [], {}), NoTelemetry)
