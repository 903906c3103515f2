"""zluda-runner: run unmodified CUDA builds on AMD GPUs through ZLUDA, and prove how well.

The stable API (docs/api.md) is what ``__all__`` lists, used as ``import zluda_runner as zr``:

    options = zr.Options(cache_dir=Path("cache"))
    choice = zr.choose_release(options)            # which release, and why
    folder = zr.fetch(options, version=choice.release).path
    plan = zr.plan_command(["python", "app.py"], options)
    status = zr.run(["python", "app.py"], options)  # or zr.prepare_launch(...) to start it yourself

Every name is imported on first use: ``import zluda_runner`` imports nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"
"""This package's version; the API in ``__all__`` follows semantic versioning (docs/api.md)."""
JSON_SCHEMA_VERSION = 1

# public name -> the module that defines it (imported when the name is first used)
_PUBLIC = {
    **dict.fromkeys(
        ("CacheCleaned", "CacheListing", "CachePath", "Launch", "Options", "Placed", "Recordable",
         "Recorded", "Rejected", "ReleaseChoice", "ReleaseListing", "ResultRow", "ResultRows",
         "ResultsDiff", "cache_path",
         "cached_release", "check_trace_supported", "choose_release", "clean_cache",
         "clean_compile_cache", "compile_cache", "delete_result", "diff_results", "export_results",
         "fetch", "get_result", "import_results", "inspect", "list_cache", "list_releases",
         "list_results", "place", "placed", "placement_status", "plan_command", "prepare_launch",
         "read_trace", "record_result", "restore", "results_files", "results_location", "results_matrix",
         "run", "run_ab", "run_doctor", "run_poc", "run_probe", "start", "trace_launch", "update_manifest",
         "verify_launch", "verify_plan", "warmup"),
        "zluda_runner.api",
    ),
    **dict.fromkeys(
        ("ZludaRunnerError", "CheckFailedError", "ManifestError", "SelectionError", "FetchError",
         "ChecksumError", "UnsafeArchiveError", "ArchiveError", "CacheError", "BinaryFormatError",
         "TargetError", "PlanError", "FatalPlanError", "LaunchError", "CommandNotFoundError",
         "CommandNotExecutableError", "PlacementError", "FileInUseError", "NativeBuildError", "ProbeError",
         "TraceError", "HostError"),
        "zluda_runner.core.errors",
    ),
    "NothingFitsError": "zluda_runner.release.selection",
    "ResultsStoreError": "zluda_runner.results.schema",
    "Fetched": "zluda_runner.release.obtain",
    "ShimPlan": "zluda_runner.plan.model",
    "Binding": "zluda_runner.plan.model",
    "TargetProfile": "zluda_runner.inspection.profile",
}

__all__ = [
    "ArchiveError",
    "BinaryFormatError",
    "Binding",
    "CacheCleaned",
    "CacheError",
    "CacheListing",
    "CachePath",
    "CheckFailedError",
    "ChecksumError",
    "CommandNotExecutableError",
    "CommandNotFoundError",
    "FatalPlanError",
    "FetchError",
    "Fetched",
    "FileInUseError",
    "HostError",
    "Launch",
    "LaunchError",
    "ManifestError",
    "NativeBuildError",
    "NothingFitsError",
    "Options",
    "Placed",
    "PlacementError",
    "PlanError",
    "ProbeError",
    "Recordable",
    "Recorded",
    "Rejected",
    "ReleaseChoice",
    "ReleaseListing",
    "ResultRow",
    "ResultRows",
    "ResultsDiff",
    "ResultsStoreError",
    "SelectionError",
    "ShimPlan",
    "TargetError",
    "TargetProfile",
    "TraceError",
    "UnsafeArchiveError",
    "ZludaRunnerError",
    "__version__",
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
    from zluda_runner.api import (
        CacheCleaned,
        CacheListing,
        CachePath,
        Launch,
        Options,
        Placed,
        Recordable,
        Recorded,
        Rejected,
        ReleaseChoice,
        ReleaseListing,
        ResultRow,
        ResultRows,
        ResultsDiff,
        cache_path,
        cached_release,
        check_trace_supported,
        choose_release,
        clean_cache,
        clean_compile_cache,
        compile_cache,
        delete_result,
        diff_results,
        export_results,
        fetch,
        get_result,
        import_results,
        inspect,
        list_cache,
        list_releases,
        list_results,
        place,
        placed,
        placement_status,
        plan_command,
        prepare_launch,
        read_trace,
        record_result,
        restore,
        results_files,
        results_location,
        results_matrix,
        run,
        run_ab,
        run_doctor,
        run_poc,
        run_probe,
        start,
        trace_launch,
        update_manifest,
        verify_launch,
        verify_plan,
        warmup,
    )
    from zluda_runner.core.errors import (
        ArchiveError,
        BinaryFormatError,
        CacheError,
        CheckFailedError,
        ChecksumError,
        CommandNotExecutableError,
        CommandNotFoundError,
        FatalPlanError,
        FetchError,
        FileInUseError,
        HostError,
        LaunchError,
        ManifestError,
        NativeBuildError,
        PlacementError,
        PlanError,
        ProbeError,
        SelectionError,
        TargetError,
        TraceError,
        UnsafeArchiveError,
        ZludaRunnerError,
    )
    from zluda_runner.inspection.profile import TargetProfile
    from zluda_runner.plan.model import Binding, ShimPlan
    from zluda_runner.release.obtain import Fetched
    from zluda_runner.release.selection import NothingFitsError
    from zluda_runner.results.schema import ResultsStoreError


def __getattr__(name: str) -> object:
    """A public name, imported on first use (and kept, so the next use is a plain attribute)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'zluda_runner' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
