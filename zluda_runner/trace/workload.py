"""``zluda-run --trace -- CMD``: a planned workload run with every driver call recorded.

The tracer must be the ``libcuda.so.1`` the workload finds, so ZLUDA's driver is kept out of the
plan's links and redirections and the tracer forwards to it: the release's own tracer
(``trace/``) when it ships one, else our interposer.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from zluda_runner.core.errors import TraceError
from zluda_runner.core.fsutil import atomic_write_text
from zluda_runner.core.paths import CachePaths
from zluda_runner.core.settings import Settings
from zluda_runner.launch.prepare import launch_env
from zluda_runner.plan.model import ShimPlan
from zluda_runner.results.userfiles import OutputFileError, output_path, store_files, write_output
from zluda_runner.trace.model import TraceReport
from zluda_runner.trace.run import run_traced


@dataclass(frozen=True)
class TracedRun:
    report: TraceReport
    saved_to: Path

    @property
    def exit_code(self) -> int:
        """The workload's own exit code (124 when it did not finish)."""
        return self.report.exit_code if self.report.exit_code is not None else 124


NOT_ON_WINDOWS = ("{cmd:--trace -- CMD} is not supported on Windows: the tracer interposes on Linux's "
                  "libcuda.so.1 (LD_PRELOAD/LD_LIBRARY_PATH), which a Windows workload never loads")
NOT_ON_WINDOWS_HINT = ("trace the workload on Linux; on Windows {cmd:probe --libcuda nvcuda.dll} shows "
                       "which driver calls ZLUDA's nvcuda.dll answers")


def check_supported(plan_os: str | None = None) -> None:
    """Refuse (exit 1) at once where tracing cannot work: on Windows, or for a Windows plan."""
    if sys.platform == "win32" or plan_os == "windows":
        raise TraceError(NOT_ON_WINDOWS, hint=NOT_ON_WINDOWS_HINT)


def trace_workload(plan: ShimPlan, argv: list[str], settings: Settings) -> TracedRun:
    check_supported(plan.os)
    driver = next((b for b in plan.bindings if b.family == "driver" and b.shim), None)
    if driver is None or driver.shim is None or plan.os != "linux":
        raise TraceError(
            "tracing needs a Linux plan with a driver library to forward to",
            hint="see {cmd:plan -- CMD}: the release must provide libcuda.so.1",
        )
    keep = store_files(settings)  # --trace-out is checked before the workload runs: never the store
    asked = None if settings.trace_out is None else output_path(settings.trace_out, keep,
                                                                 what="the trace report", option=_OPTION)
    # the driver is reached through the tracer, which forwards to the shim: no link to it, no redirect
    traced_plan = dataclasses.replace(
        plan,
        link_map={n: t for n, t in plan.link_map.items() if t != driver.shim},
        redirect_map={n: t for n, t in plan.redirect_map.items() if t != driver.shim},
    )
    env = launch_env(traced_plan, settings.cache_dir)
    out_dir = CachePaths(settings.cache_dir).traces
    zluda_dir = Path(plan.release.root) if plan.release else None
    report = run_traced(argv, env, real_libcuda=Path(driver.shim), out_dir=out_dir, zluda_dir=zluda_dir,
                        cache_dir=settings.cache_dir)
    target = asked or out_dir / f"trace-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json"
    try:
        write_output(target, report.to_json(), keep, what="the trace report", option=_OPTION)
    except OutputFileError as exc:
        fallback = out_dir / target.name
        atomic_write_text(fallback, report.to_json())  # never lose the report
        raise OutputFileError(f"{exc.message}; it was saved as {fallback}", hint=exc.hint) from None
    return TracedRun(report, target)


_OPTION = "{opt:trace_out}"
