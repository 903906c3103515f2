"""ZLUDA's compile cache as text: what ``cache compile`` finds, what ``--clean`` removed, what warmup's
``--clear-caches`` cleared (the data: :mod:`zluda_runner.host.compile_cache`)."""

from __future__ import annotations

from zluda_runner.core.units import format_bytes
from zluda_runner.host.compile_cache import CleanResult, ClearedCaches, CompileCacheInfo


def render_compile_cache(info: CompileCacheInfo) -> str:
    """The cache folders (absent ones marked), each database file with its size, the total."""
    lines = [f"{folder}{'' if folder.is_dir() else ' (absent)'}" for folder in info.dirs]
    lines += [f"  {entry.path.name}  {format_bytes(entry.bytes)}" for entry in info.files]
    lines.append(f"total: {info.file_count} file(s), {format_bytes(info.total_bytes)}")
    return "\n".join(lines)


def render_compile_clean(result: CleanResult) -> str:
    """One line: how many files ``cache compile --clean`` removed and what that freed."""
    return f"removed {len(result.removed)} file(s), freed {format_bytes(result.freed_bytes)}"


def render_cleared(result: ClearedCaches) -> str:
    """Each file removed (with its size), skipped or not removable, then the total."""
    lines = [f"removed {entry.path} ({format_bytes(entry.bytes)})" for entry in result.removed]
    lines += [f"skipped {why}" for why in result.skipped]
    lines += [f"could not remove {why}" for why in result.failed]
    lines.append(f"cleared {len(result.removed)} cache file(s), freed {format_bytes(result.freed_bytes)}")
    return "\n".join(lines)
