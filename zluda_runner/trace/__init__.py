"""Driver-call traces: ZLUDA's own tracer logs or our interposer's counts, one TraceReport."""

from zluda_runner.trace.model import (
    ExportTableRequest,
    FirstFailure,
    ProcAddressLookup,
    TraceCall,
    TraceProcess,
    TraceReport,
    merge_processes,
)
from zluda_runner.trace.run import find_zluda_tracer, read_trace_dir, run_traced

__all__ = [
    "ExportTableRequest",
    "FirstFailure",
    "ProcAddressLookup",
    "TraceCall",
    "TraceProcess",
    "TraceReport",
    "find_zluda_tracer",
    "merge_processes",
    "read_trace_dir",
    "run_traced",
]
