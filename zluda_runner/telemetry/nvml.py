"""NVML (NVIDIA), for ``--native`` runs: only when ``pynvml`` (nvidia-ml-py, the ``nvml`` extra)
imports.  Calls and units from nvidia-ml-py 13.615.71's ``pynvml.py`` (NVIDIA's NVML API reference):
``nvmlDeviceGetUtilizationRates(h).gpu`` (%), ``nvmlDeviceGetMemoryInfo(h).used/.total`` (bytes),
``nvmlDeviceGetPowerUsage(h)`` (milliwatts), ``nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU)`` (°C).

Which GPU: the first entry of ``CUDA_VISIBLE_DEVICES`` (an index, or a ``GPU-…`` UUID), else device 0.
NVML numbers GPUs in PCI bus order; CUDA does so only with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (else
fastest first), so with several GPUs and another order the choice is said to be a guess.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TypeVar

from zluda_runner.telemetry.model import GpuReading, NoTelemetry

T = TypeVar("T")


Errors = tuple[type[BaseException], ...]


def _errors(nvml: ModuleType) -> Errors:
    """What a failed NVML call raises: pynvml's NVMLError (a subclass per return code)."""
    error = getattr(nvml, "NVMLError", None)
    return (error, OSError) if isinstance(error, type) and issubclass(error, Exception) else (OSError,)


def _attempt(errors: Errors, call: Callable[[], T]) -> T | None:
    """One NVML query; None when this GPU or driver does not answer it."""
    try:
        return call()
    except errors:
        return None


class NvmlSource:
    """A :class:`~zluda_runner.telemetry.source.TelemetrySource` over one NVIDIA GPU."""

    backend = "nvml"

    def __init__(self, nvml: ModuleType, handle: object, device: str) -> None:
        self._nvml, self._handle, self.device = nvml, handle, device
        self._err = _errors(nvml)
        self._closed = False

    def vram_total(self) -> int | None:
        return _attempt(self._err, lambda: int(self._nvml.nvmlDeviceGetMemoryInfo(self._handle).total))

    def read(self) -> GpuReading:
        n, h, e = self._nvml, self._handle, self._err
        milliwatts = _attempt(e, lambda: int(n.nvmlDeviceGetPowerUsage(h)))
        return GpuReading(
            busy_percent=_attempt(e, lambda: float(n.nvmlDeviceGetUtilizationRates(h).gpu)),
            vram_used=_attempt(e, lambda: int(n.nvmlDeviceGetMemoryInfo(h).used)),
            power_w=milliwatts / 1000 if milliwatts is not None else None,
            temp_c=_attempt(e, lambda: float(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU))),
        )

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _attempt(self._err, self._nvml.nvmlShutdown)


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def open_nvml(env: Mapping[str, str]) -> NvmlSource | NoTelemetry:
    try:
        nvml = importlib.import_module("pynvml")
    except ImportError:
        return NoTelemetry("NVML: pynvml is not installed (pip install 'zluda-runner[nvml]')")
    errors = _errors(nvml)
    try:
        nvml.nvmlInit()
    except errors as exc:  # NVMLError_LibraryNotFound, NVMLError_DriverNotLoaded ...
        return NoTelemetry(f"NVML: no NVIDIA driver answered ({exc})")
    picked = _pick(nvml, env, errors)
    if isinstance(picked, NoTelemetry):
        _attempt(errors, nvml.nvmlShutdown)
        return picked
    handle, how = picked
    name = _attempt(errors, lambda: _text(nvml.nvmlDeviceGetName(handle))) or "NVIDIA GPU"
    return NvmlSource(nvml, handle, name + (f": {how}" if how else ""))


def _pick(nvml: ModuleType, env: Mapping[str, str], errors: Errors) -> tuple[object, str] | NoTelemetry:
    count = _attempt(errors, lambda: int(nvml.nvmlDeviceGetCount())) or 0
    if count <= 0:
        return NoTelemetry("NVML: no NVIDIA GPU")
    visible = env.get("CUDA_VISIBLE_DEVICES")
    first = visible.split(",")[0].strip() if visible is not None else ""
    if visible is not None and not first:
        return NoTelemetry("NVML: CUDA_VISIBLE_DEVICES is empty: the workload sees no GPU")
    if first.startswith(("GPU-", "MIG-")):
        handle = _attempt(errors, lambda: nvml.nvmlDeviceGetHandleByUUID(first))
        if handle is None:
            return NoTelemetry(f"NVML: no GPU {first} (CUDA_VISIBLE_DEVICES)")
        return handle, f"CUDA_VISIBLE_DEVICES={visible}" if count > 1 else ""
    index = int(first) if first.isdigit() else 0
    if index >= count:
        return NoTelemetry(f"NVML: CUDA_VISIBLE_DEVICES={visible} names no GPU of {count}")
    handle = _attempt(errors, lambda: nvml.nvmlDeviceGetHandleByIndex(index))
    if handle is None:
        return NoTelemetry(f"NVML: GPU {index} does not answer")
    if count == 1:
        return handle, ""
    setting = f"CUDA_VISIBLE_DEVICES={visible}" if visible else "CUDA_VISIBLE_DEVICES unset"
    how = f"NVML GPU {index} of {count} ({setting})"
    if env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        how += "; CUDA may order GPUs fastest first: set CUDA_DEVICE_ORDER=PCI_BUS_ID to be sure"
    return handle, how
