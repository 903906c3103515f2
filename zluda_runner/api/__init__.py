"""The public API launchers embed (SD.Next, ComfyUI-Zluda, StabilityMatrix): every name here is
re-exported by :mod:`zluda_runner` and listed in its ``__all__``; docs/api.md states the promise.

One options record (:class:`Options`) for every call; errors are the
:class:`~zluda_runner.core.errors.ZludaRunnerError` family, with hints worded for a Python caller.
Each name is imported on first use, and the stages by each call: ``import zluda_runner`` (and a
``zluda-run`` launch, which uses a few of these names) stays cheap. The ``zluda-run``
command line is a front end over these calls (and :mod:`zluda_runner.api.terms`, its option words).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# public name -> the module of this package that defines it (imported when the name is first used)
_MODULES = {
    "CacheCleaned": "zluda_runner.api.cache",
    "CacheListing": "zluda_runner.api.cache",
    "CachePath": "zluda_runner.api.cache",
    "cache_path": "zluda_runner.api.cache",
    "clean_cache": "zluda_runner.api.cache",
    "clean_compile_cache": "zluda_runner.api.cache",
    "compile_cache": "zluda_runner.api.cache",
    "list_cache": "zluda_runner.api.cache",
    "run_doctor": "zluda_runner.api.checking",
    "run_probe": "zluda_runner.api.checking",
    "check_trace_supported": "zluda_runner.api.evidence",
    "read_trace": "zluda_runner.api.evidence",
    "trace_launch": "zluda_runner.api.evidence",
    "verify_launch": "zluda_runner.api.evidence",
    "verify_plan": "zluda_runner.api.evidence",
    "Launch": "zluda_runner.api.launching",
    "inspect": "zluda_runner.api.launching",
    "plan_command": "zluda_runner.api.launching",
    "prepare_launch": "zluda_runner.api.launching",
    "run": "zluda_runner.api.launching",
    "start": "zluda_runner.api.launching",
    "Options": "zluda_runner.api.options",
    "Placed": "zluda_runner.api.placing",
    "place": "zluda_runner.api.placing",
    "placed": "zluda_runner.api.placing",
    "placement_status": "zluda_runner.api.placing",
    "restore": "zluda_runner.api.placing",
    "run_poc": "zluda_runner.api.poc",
    "Rejected": "zluda_runner.api.releases",
    "ReleaseChoice": "zluda_runner.api.releases",
    "ReleaseListing": "zluda_runner.api.releases",
    "cached_release": "zluda_runner.api.releases",
    "choose_release": "zluda_runner.api.releases",
    "fetch": "zluda_runner.api.releases",
    "list_releases": "zluda_runner.api.releases",
    "update_manifest": "zluda_runner.api.releases",
    "Recordable": "zluda_runner.api.store",
    "Recorded": "zluda_runner.api.store",
    "ResultRow": "zluda_runner.api.store",
    "ResultRows": "zluda_runner.api.store",
    "ResultsDiff": "zluda_runner.api.store",
    "delete_result": "zluda_runner.api.store",
    "diff_results": "zluda_runner.api.store",
    "export_results": "zluda_runner.api.store",
    "get_result": "zluda_runner.api.store",
    "import_results": "zluda_runner.api.store",
    "list_results": "zluda_runner.api.store",
    "record_result": "zluda_runner.api.store",
    "results_location": "zluda_runner.api.store",
    "results_files": "zluda_runner.api.store",
    "results_matrix": "zluda_runner.api.store",
    "run_ab": "zluda_runner.api.workloads",
    "warmup": "zluda_runner.api.workloads",
}

__all__ = [
    "CacheCleaned",
    "CacheListing",
    "CachePath",
    "Launch",
    "Options",
    "Placed",
    "Recordable",
    "Recorded",
    "Rejected",
    "ReleaseChoice",
    "ReleaseListing",
    "ResultRow",
    "ResultRows",
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
    "results_files",
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

if TYPE_CHECKING:
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
        Recordable,
        Recorded,
        ResultRow,
        ResultRows,
        ResultsDiff,
        delete_result,
        diff_results,
        export_results,
        get_result,
        import_results,
        list_results,
        record_result,
        results_files,
        results_location,
        results_matrix,
    )
    from zluda_runner.api.workloads import run_ab, warmup


def __getattr__(name: str) -> object:
    """A public name, imported on first use (and kept, so the next use is a plain attribute)."""
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'zluda_runner.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULES})
