"""Active probes: driver API cases through cffi, and torch ops in the target interpreter."""

from .model import CaseResult, LoadResult, ProbeReport, SymbolCoverage
from .runner import run_probe
from .torch_probe import run_torch_probe

__all__ = ["CaseResult", "LoadResult", "ProbeReport", "SymbolCoverage", "run_probe", "run_torch_probe"]
