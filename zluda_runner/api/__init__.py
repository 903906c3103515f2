"""The public API launchers embed (SD.Next, ComfyUI-Zluda, StabilityMatrix): every name here is
re-exported by :mod:`zluda_runner` and listed in its ``__all__``; docs/api.md states the promise.

One options record (:class:`Options`) for every call; errors are the
:class:`~zluda_runner.core.errors.ZludaRunnerError` family, with hints worded for a Python caller.
The stages are imported by each call, not here: ``import zluda_runner`` stays cheap. The ``zluda-run``
command line is a front end over these calls (and :mod:`zluda_runner.api.terms`, its option words).
"""

from __future__ import annotations

from zluda_runner.api.cache import (
    CacheCleaned,
    CacheListing,
    CachePath,
    cache_path,
    clean_cache,
    clean_compile_cache,
    compile_cache,
    list_cache,
)
from zluda_runner.api.checking import run_doctor, run_probe
from zluda_runner.api.evidence import (
    check_trace_supported,
    read_trace,
    trace_launch,
    verify_launch,
    verify_plan,
)
from zluda_runner.api.launching import Launch, inspect, plan_command, prepare_launch, run, start
from zluda_runner.api.options import Options
from zluda_runner.api.placing import Placed, place, placed, placement_status, restore
from zluda_runner.api.poc import run_poc
from zluda_runner.api.releases import (
    Rejected,
    ReleaseChoice,
    ReleaseListing,
    cached_release,
    choose_release,
    fetch,
    list_releases,
    update_manifest,
)
from zluda_runner.api.store import (
    Recorded,
    ResultsDiff,
    delete_result,
    diff_results,
    export_results,
    get_result,
    import_results,
    list_results,
    record_result,
    results_location,
    results_matrix,
)
from zluda_runner.api.workloads import run_ab, warmup

__all__ = [
    "CacheCleaned",
    "CacheListing",
    "CachePath",
    "Launch",
    "Options",
    "Placed",
    "Recorded",
    "Rejected",
    "ReleaseChoice",
    "ReleaseListing",
    "ResultsDiff",
    "cache_path",
    "cached_release",
    "check_trace_supported",
    "choose_release",
    "clean_cache",
    "clean_compile_cache",
    "compile_cache",
    "delete_result",
    "diff_results",
    "export_results",
    "fetch",
    "get_result",
    "import_results",
    "inspect",
    "list_cache",
    "list_releases",
    "list_results",
    "place",
    "placed",
    "placement_status",
    "plan_command",
    "prepare_launch",
    "read_trace",
    "record_result",
    "restore",
    "results_location",
    "results_matrix",
    "run",
    "run_ab",
    "run_doctor",
    "run_poc",
    "run_probe",
    "start",
    "trace_launch",
    "update_manifest",
    "verify_launch",
    "verify_plan",
    "warmup",
]
