"""Terminal views of the download cache: what is cached, what a clean removed."""

from __future__ import annotations

from zluda_runner.core.textfit import Col, fit_table, view_width
from zluda_runner.core.units import format_bytes
from zluda_runner.release.cache import CacheEntry, CleanResult, PartialDownload
from zluda_runner.report.terminal import say

#: release ids, asset names and paths are never broken; narrower, the dates and hash sources go first
COLUMNS = [Col("release", wrap=False, head=True), Col("asset", wrap=False, head=True),
           Col("size", right=True), Col("hash from", drop=2), Col("fetched", drop=3), Col("path", wrap=False)]


def partial_line(part: PartialDownload) -> str:
    total = f" of {format_bytes(part.total)}" if part.total is not None else ""
    return (f"partial download {part.release_id} {part.asset}: {format_bytes(part.bytes_so_far)}{total} "
            f"so far ({part.path}); the next `zluda-run fetch {part.release_id}` resumes it")


def print_entries(entries: list[CacheEntry], cache_dir: object, partial: list[PartialDownload] | None = None,
                  width: int | None = -1) -> None:
    """The cached releases (a table fitted to ``width``, default the terminal's), then partial downloads."""
    fit = view_width() if width == -1 else width
    lines = [f"no releases cached in {cache_dir}"] if not entries else fit_table(COLUMNS, [
        [e.release_id, e.asset, format_bytes(e.bytes_on_disk), e.hash_source, e.fetched_at, str(e.path)]
        for e in entries], fit)
    lines += [partial_line(p) for p in partial or []]
    say(lines, hang=4, width=fit)


def render_clean(result: CleanResult, release_id: str | None) -> str:
    what = f"release {release_id}" if release_id else "all releases"
    return f"removed {len(result.removed)} item(s) of {what}, freed {format_bytes(result.bytes_freed)}"
