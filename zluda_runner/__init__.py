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

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)

# THE table of public names: name -> the module that defines it (imported when the name is first used),
# in the order docs/api.md lists them (tools/api_names.py writes its tables from this and the docstrings,
# and the imports for type checkers below).
# It makes ``__all__``, the lazy ``__getattr__``, and what tests/api and docs/api.md are checked against.
_PROVISIONAL = {  # in __all__, typed and documented, but what they return is not frozen yet
    **dict.fromkeys(("list_releases", "ReleaseListing", "update_manifest"), "zluda_runner.api.releases"),
    **dict.fromkeys(("list_cache", "CacheListing", "clean_cache", "CacheCleaned", "compile_cache",
                     "clean_compile_cache"), "zluda_runner.api.cache"),
    **dict.fromkeys(("warmup", "run_ab"), "zluda_runner.api.workloads"),
    **dict.fromkeys(("run_poc",), "zluda_runner.api.poc"),
    **dict.fromkeys(("find",), "zluda_runner.api.find"),
    **dict.fromkeys(("verify_launch", "verify_plan", "check_trace_supported", "trace_launch", "read_trace"),
                    "zluda_runner.api.evidence"),
    **dict.fromkeys(("diff_results", "ResultsDiff", "results_matrix"), "zluda_runner.api.store"),
}
_PUBLIC = {
    **dict.fromkeys(("Options",), "zluda_runner.core.settings"),
    **dict.fromkeys(("choose_release", "fetch", "cached_release", "ReleaseChoice", "Rejected"),
                    "zluda_runner.api.releases"),
    **dict.fromkeys(("inspect", "plan_command", "prepare_launch", "run", "start", "Launch"),
                    "zluda_runner.api.launching"),
    **dict.fromkeys(("place", "restore", "placement_status", "placed", "Placed"), "zluda_runner.api.placing"),
    **dict.fromkeys(("run_probe", "run_doctor"), "zluda_runner.api.checking"),
    **dict.fromkeys(("record_result", "list_results", "get_result", "delete_result", "export_results",
                     "import_results", "results_location", "results_files", "Recorded", "Recordable",
                     "ResultRows", "ResultRow"), "zluda_runner.api.store"),
    **dict.fromkeys(("cache_path", "CachePath"), "zluda_runner.api.cache"),
    **dict.fromkeys(("Fetched",), "zluda_runner.release.obtain"),
    **dict.fromkeys(("ShimPlan", "Binding"), "zluda_runner.plan.model"),
    **dict.fromkeys(("TargetProfile",), "zluda_runner.inspection.profile"),
    **_PROVISIONAL,
    **dict.fromkeys((
        "ZludaRunnerError", "CheckFailedError", "ManifestError", "SelectionError", "FetchError",
        "ChecksumError", "ArchiveError", "UnsafeArchiveError", "CacheError", "BinaryFormatError",
        "TargetError", "PlanError", "FatalPlanError", "LaunchError", "CommandNotFoundError",
        "CommandNotExecutableError", "PlacementError", "FileInUseError", "NativeBuildError", "ProbeError",
        "TraceError", "HostError", "LockError", "LockDriftError", "NotWritableError",
    ), "zluda_runner.core.errors"),
    **dict.fromkeys(("NothingFitsError",), "zluda_runner.release.selection"),
    **dict.fromkeys(("ResultsStoreError",), "zluda_runner.results.schema"),
    **dict.fromkeys(("__version__",), "zluda_runner.core.version"),
}
__all__ = sorted(_PUBLIC)
__version__: str
"""This package's version; the API in ``__all__`` follows semantic versioning (docs/api.md)."""

if TYPE_CHECKING:  # the same table for type checkers, written from it by tools/api_names.py
    from zluda_runner.api.cache import (
        CacheCleaned as CacheCleaned,
        CacheListing as CacheListing,
        CachePath as CachePath,
        cache_path as cache_path,
        clean_cache as clean_cache,
        clean_compile_cache as clean_compile_cache,
        compile_cache as compile_cache,
        list_cache as list_cache,
    )
    from zluda_runner.api.checking import (
        run_doctor as run_doctor,
        run_probe as run_probe,
    )
    from zluda_runner.api.evidence import (
        check_trace_supported as check_trace_supported,
        read_trace as read_trace,
        trace_launch as trace_launch,
        verify_launch as verify_launch,
        verify_plan as verify_plan,
    )
    from zluda_runner.api.find import (
        find as find,
    )
    from zluda_runner.api.launching import (
        Launch as Launch,
        inspect as inspect,
        plan_command as plan_command,
        prepare_launch as prepare_launch,
        run as run,
        start as start,
    )
    from zluda_runner.api.placing import (
        Placed as Placed,
        place as place,
        placed as placed,
        placement_status as placement_status,
        restore as restore,
    )
    from zluda_runner.api.poc import (
        run_poc as run_poc,
    )
    from zluda_runner.api.releases import (
        Rejected as Rejected,
        ReleaseChoice as ReleaseChoice,
        ReleaseListing as ReleaseListing,
        cached_release as cached_release,
        choose_release as choose_release,
        fetch as fetch,
        list_releases as list_releases,
        update_manifest as update_manifest,
    )
    from zluda_runner.api.store import (
        Recordable as Recordable,
        Recorded as Recorded,
        ResultRow as ResultRow,
        ResultRows as ResultRows,
        ResultsDiff as ResultsDiff,
        delete_result as delete_result,
        diff_results as diff_results,
        export_results as export_results,
        get_result as get_result,
        import_results as import_results,
        list_results as list_results,
        record_result as record_result,
        results_files as results_files,
        results_location as results_location,
        results_matrix as results_matrix,
    )
    from zluda_runner.api.workloads import (
        run_ab as run_ab,
        warmup as warmup,
    )
    from zluda_runner.core.errors import (
        ArchiveError as ArchiveError,
        BinaryFormatError as BinaryFormatError,
        CacheError as CacheError,
        CheckFailedError as CheckFailedError,
        ChecksumError as ChecksumError,
        CommandNotExecutableError as CommandNotExecutableError,
        CommandNotFoundError as CommandNotFoundError,
        FatalPlanError as FatalPlanError,
        FetchError as FetchError,
        FileInUseError as FileInUseError,
        HostError as HostError,
        LaunchError as LaunchError,
        LockDriftError as LockDriftError,
        LockError as LockError,
        ManifestError as ManifestError,
        NativeBuildError as NativeBuildError,
        NotWritableError as NotWritableError,
        PlacementError as PlacementError,
        PlanError as PlanError,
        ProbeError as ProbeError,
        SelectionError as SelectionError,
        TargetError as TargetError,
        TraceError as TraceError,
        UnsafeArchiveError as UnsafeArchiveError,
        ZludaRunnerError as ZludaRunnerError,
    )
    from zluda_runner.core.settings import (
        Options as Options,
    )
    from zluda_runner.inspection.profile import (
        TargetProfile as TargetProfile,
    )
    from zluda_runner.plan.model import (
        Binding as Binding,
        ShimPlan as ShimPlan,
    )
    from zluda_runner.release.obtain import (
        Fetched as Fetched,
    )
    from zluda_runner.release.selection import (
        NothingFitsError as NothingFitsError,
    )
    from zluda_runner.results.schema import (
        ResultsStoreError as ResultsStoreError,
    )


def __getattr__(name: str) -> object:
    """A public name, imported on first use (and kept, so the next use is a plain attribute)."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'zluda_runner' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
