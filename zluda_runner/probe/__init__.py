"""Active probes: driver API cases through cffi, and torch ops in the target interpreter."""

from zluda_runner.probe.model import CaseResult, LoadResult, ProbeReport, SymbolCoverage
from zluda_runner.probe.runner import run_probe
from zluda_runner.probe.torch_probe import run_torch_probe

__all__ = ["CaseResult", "LoadResult", "ProbeReport", "SymbolCoverage", "run_probe", "run_torch_probe"]
