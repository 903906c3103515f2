"""``zluda-run warmup`` as text: the heartbeat while the workload compiles, the totals at the end (the
run itself: :mod:`zluda_runner.launch.warmup`)."""

from __future__ import annotations

from zluda_runner.core.units import format_bytes
from zluda_runner.launch.warmup import METHOD_FALLBACK, METHOD_PRECOMPILE, WarmupReport
from zluda_runner.report.compile_cache_view import render_cleared


def warmup_heartbeat(elapsed: float, cache_bytes: int, grown: int) -> str:
    """One heartbeat line: time so far, the compile cache's growth and size."""
    return (
        f"warmup: still running after {elapsed:.0f} s; compile cache +{format_bytes(max(grown, 0))} "
        f"so far, now {format_bytes(cache_bytes)} (a first run compiles GPU code, this can take minutes)"
    )


def render_warmup(report: WarmupReport, name: str) -> str:
    """The totals, for workload ``name`` (what the user typed first)."""
    lines: list[str] = []
    if report.cleared is not None:
        lines.append(render_cleared(report.cleared))
    if report.method == METHOD_PRECOMPILE:
        who = f"the release's zluda_precompile on {report.precompile_argv[-1]}"
    elif report.method == METHOD_FALLBACK:
        lines.append(f"warmup: the release's zluda_precompile exited {report.precompile_exit}; ran {name} "
                     "instead")
        who = name
    else:
        who = name
    lines.append(
        f"warmup: {who} exited {report.exit_code} after {report.elapsed_s:.1f} s; compile cache "
        f"grew by {format_bytes(max(report.grew_bytes, 0))} ({report.grew_files:+d} files), now "
        f"{format_bytes(report.bytes_after)}"
    )
    return "\n".join(lines)
