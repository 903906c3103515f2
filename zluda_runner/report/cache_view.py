"""Terminal views of the download cache: what is cached, what a clean removed."""

from __future__ import annotations

from zluda_runner.core.units import format_bytes
from zluda_runner.release.cache import CacheEntry, CleanResult
from zluda_runner.report.terminal import grid, make_console


def print_entries(entries: list[CacheEntry], cache_dir: object) -> None:
    out = make_console()
    if not entries:
        out.print(f"no releases cached in {cache_dir}")
        return
    rows = [[e.release_id, e.asset, format_bytes(e.bytes_on_disk), e.hash_source, e.fetched_at, str(e.path)]
            for e in entries]
    out.print(grid(["release", "asset", "size", "hash from", "fetched", "path"], rows, numeric=[2]))


def render_clean(result: CleanResult, release_id: str | None) -> str:
    what = f"release {release_id}" if release_id else "all releases"
    return f"removed {len(result.removed)} item(s) of {what}, freed {format_bytes(result.bytes_freed)}"
