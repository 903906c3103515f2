"""The NVML back end (``--native`` on NVIDIA) against a stand-in ``pynvml`` module with the real
one's names and units (nvidia-ml-py 13.615.71, pynvml.py: nvmlInit, nvmlDeviceGetCount,
nvmlDeviceGetHandleByIndex/ByUUID, nvmlDeviceGetName (str, via convertStrBytes),
nvmlDeviceGetUtilizationRates().gpu, nvmlDeviceGetMemoryInfo().used/.total (bytes),
nvmlDeviceGetPowerUsage (mW), nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU), NVMLError)."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import pytest

from tests.golden import assert_golden
from zluda_runner.telemetry.model import GpuReading, NoTelemetry
from zluda_runner.telemetry.nvml import NvmlSource, open_nvml
from zluda_runner.telemetry.sampler import open_source


class NVMLError(Exception):
    pass


@dataclass
class Memory:
    total: int
    free: int
    used: int


@dataclass
class Utilization:
    gpu: int
    memory: int


def fake_pynvml(gpus: list[dict[str, object]], *, init_fails: bool = False) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    state = {"shutdowns": 0}

    def init() -> None:
        if init_fails:
            raise NVMLError("Driver Not Loaded")

    def by_index(i: int) -> int:
        if i >= len(gpus):
            raise NVMLError("Invalid Argument")
        return i

    def by_uuid(uuid: str) -> int:
        return next(i for i, g in enumerate(gpus) if g["uuid"] == uuid)

    def power(h: int) -> int:
        if gpus[h].get("power_mw") is None:
            raise NVMLError("Not Supported")
        return int(gpus[h]["power_mw"])  # type: ignore[call-overload]

    m.NVMLError = NVMLError  # type: ignore[attr-defined]
    m.NVML_TEMPERATURE_GPU = 0  # type: ignore[attr-defined]
    m.nvmlInit = init  # type: ignore[attr-defined]
    m.nvmlShutdown = lambda: state.__setitem__("shutdowns", state["shutdowns"] + 1)  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: len(gpus)  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = by_index  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByUUID = by_uuid  # type: ignore[attr-defined]
    m.nvmlDeviceGetName = lambda h: gpus[h]["name"]  # type: ignore[attr-defined]
    m.nvmlDeviceGetUtilizationRates = lambda h: Utilization(gpus[h]["busy"], 3)  # type: ignore[attr-defined]
    m.nvmlDeviceGetMemoryInfo = lambda h: Memory(gpus[h]["total"], 0, gpus[h]["used"])  # type: ignore[attr-defined]
    m.nvmlDeviceGetPowerUsage = power  # type: ignore[attr-defined]
    m.nvmlDeviceGetTemperature = lambda h, sensor: gpus[h]["temp"] if sensor == 0 else -1  # type: ignore[attr-defined]
    m.state = state  # type: ignore[attr-defined]
    return m


H200 = {"name": "NVIDIA H200", "uuid": "GPU-aaaa", "busy": 97, "total": 150_000_000_000,
        "used": 40_000_000_000, "power_mw": 612_500, "temp": 58}
OTHER = {"name": "NVIDIA L4", "uuid": "GPU-bbbb", "busy": 0, "total": 24_000_000_000,
         "used": 1_000, "power_mw": None, "temp": 30}


def _open(monkeypatch: pytest.MonkeyPatch, gpus: list[dict[str, object]], env: dict[str, str],
          **kw: bool) -> NvmlSource | NoTelemetry:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(gpus, **kw))
    return open_nvml(env)


def test_one_reading_in_the_units_of_the_record(monkeypatch: pytest.MonkeyPatch) -> None:
    source = _open(monkeypatch, [H200], {})
    assert isinstance(source, NvmlSource)
    expected = GpuReading(busy_percent=97.0, vram_used=40_000_000_000, power_w=612.5, temp_c=58.0)
    assert source.read() == expected
    assert (source.vram_total(), source.device, source.backend) == (150_000_000_000, "NVIDIA H200", "nvml")
    source.close()
    source.close()
    assert sys.modules["pynvml"].state["shutdowns"] == 1  # type: ignore[attr-defined]


def test_a_query_the_gpu_does_not_answer_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    source = _open(monkeypatch, [H200, OTHER], env)
    assert isinstance(source, NvmlSource)
    assert source.read().power_w is None and source.read().busy_percent == 0.0
    assert source.device == "NVIDIA L4: NVML GPU 1 of 2 (CUDA_VISIBLE_DEVICES=1)"


def test_the_gpu_follows_cuda_visible_devices_and_says_when_guessing(monkeypatch: pytest.MonkeyPatch) -> None:
    by_uuid = _open(monkeypatch, [H200, OTHER], {"CUDA_VISIBLE_DEVICES": "GPU-bbbb"})
    assert isinstance(by_uuid, NvmlSource) and by_uuid.device.startswith("NVIDIA L4")
    guessed = _open(monkeypatch, [H200, OTHER], {})
    assert isinstance(guessed, NvmlSource)
    hidden = _open(monkeypatch, [H200], {"CUDA_VISIBLE_DEVICES": ""})
    beyond = _open(monkeypatch, [H200], {"CUDA_VISIBLE_DEVICES": "3"})
    assert isinstance(hidden, NoTelemetry) and isinstance(beyond, NoTelemetry)
    said = f"guessed: {guessed.device}\nhidden: {hidden.reason}\nbeyond: {beyond.reason}\n"
    assert_golden("nvml_which_gpu", said)


def test_no_driver_or_no_pynvml_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    failed = _open(monkeypatch, [H200], {}, init_fails=True)
    assert isinstance(failed, NoTelemetry) and "Driver Not Loaded" in failed.reason
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    missing = open_nvml({})
    assert isinstance(missing, NoTelemetry) and "zluda-runner[nvml]" in missing.reason


def test_native_runs_try_nvml_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml([H200]))
    found = open_source(env={}, native=True, platform="linux")
    assert isinstance(found, NvmlSource)
    found.close()
