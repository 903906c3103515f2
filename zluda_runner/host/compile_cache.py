"""ZLUDA's own compile cache: where it is, how big, and cleaning it.

ZLUDA compiles a program's PTX to AMD code on first use and keeps the result in a
SQLite database under the user cache folder of the Rust ``dirs`` crate
(``dirs::cache_dir()``: ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux,
``%LOCALAPPDATA%`` on Windows, ``~/Library/Caches`` on macOS):

- ZLUDA 3 and the lshqqytiger fork: ``<cache>/ZLUDA/ComputeCache/zluda.db``
  (``zluda/src/impl/mod.rs``, ``create_default_cache``);
- the rewrite (v4+): ``<cache>/zluda/ComputeCache/zluda.db``, in WAL mode, so
  ``zluda.db-wal`` / ``zluda.db-shm`` sit next to it (``zluda_cache/src/lib.rs``).

Only files named ``zluda*.db*`` in those folders are ever counted or removed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner import JSON_SCHEMA_VERSION
from zluda_runner.core import exitcodes
from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.units import format_bytes

CACHE_SUBDIRS = (("ZLUDA", "ComputeCache"), ("zluda", "ComputeCache"))
CACHE_FILE_GLOB = "zluda*.db*"


def user_cache_dir(
    platform: str | None = None, env: Mapping[str, str] | None = None, home: Path | None = None
) -> Path:
    """What Rust's ``dirs::cache_dir()`` answers on ``platform`` (default: this one)."""
    platform = platform or sys.platform
    env = os.environ if env is None else env
    home = home or Path.home()
    if platform == "win32":
        return Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local")
    if platform == "darwin":
        return home / "Library" / "Caches"
    xdg = env.get("XDG_CACHE_HOME")
    # dirs ignores a relative XDG_CACHE_HOME, as the XDG spec says
    if xdg and Path(xdg).is_absolute():
        return Path(xdg)
    return home / ".cache"


def compile_cache_dirs(
    platform: str | None = None, env: Mapping[str, str] | None = None, home: Path | None = None
) -> list[Path]:
    """The folders ZLUDA generations keep their compile cache in (deduplicated; Windows folds case)."""
    base = user_cache_dir(platform, env, home)
    dirs: list[Path] = []
    seen: set[str] = set()
    fold = (platform or sys.platform) in ("win32", "darwin")
    for parts in CACHE_SUBDIRS:
        path = base.joinpath(*parts)
        key = str(path).lower() if fold else str(path)
        if key not in seen:
            seen.add(key)
            dirs.append(path)
    return dirs


@dataclass
class CacheFile(JsonMixin):
    path: Path
    bytes: int


@dataclass
class CompileCacheInfo(JsonMixin):
    """The compile cache folders and the ZLUDA database files in them."""

    dirs: list[Path] = field(default_factory=list)
    files: list[CacheFile] = field(default_factory=list)
    total_bytes: int = 0
    file_count: int = 0
    schema: int = JSON_SCHEMA_VERSION


def _cache_files(folder: Path) -> list[CacheFile]:
    try:
        candidates = sorted(folder.glob(CACHE_FILE_GLOB))
    except OSError:
        return []
    found = []
    for path in candidates:
        try:
            if path.is_file() and not path.is_symlink():
                found.append(CacheFile(path=path, bytes=path.stat().st_size))
        except OSError:
            continue
    return found


def inspect_compile_cache(dirs: Iterable[Path] | None = None) -> CompileCacheInfo:
    """Sizes of ZLUDA's compile cache files (folders that do not exist count as empty)."""
    folders = list(dirs) if dirs is not None else compile_cache_dirs()
    info = CompileCacheInfo(dirs=folders)
    for folder in folders:
        info.files.extend(_cache_files(folder))
    info.total_bytes = sum(f.bytes for f in info.files)
    info.file_count = len(info.files)
    return info


@dataclass
class CleanResult(JsonMixin):
    removed: list[Path] = field(default_factory=list)
    freed_bytes: int = 0
    failed: list[str] = field(default_factory=list)
    schema: int = JSON_SCHEMA_VERSION

    @property
    def exit_code(self) -> int:
        return exitcodes.ERROR if self.failed else exitcodes.OK


def clean_compile_cache(dirs: Iterable[Path] | None = None) -> CleanResult:
    """Delete ZLUDA's compile cache database files (``zluda*.db*``) and nothing else.

    ZLUDA rebuilds the cache on the next run (slow first run again).  Close ZLUDA programs
    first: a database in use may be locked (Windows) and is then reported in ``failed``.
    """
    result = CleanResult()
    for entry in inspect_compile_cache(dirs).files:
        try:
            entry.path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            result.failed.append(f"{entry.path}: {exc.strerror or exc}")
            continue
        result.removed.append(entry.path)
        result.freed_bytes += entry.bytes
    return result


def render_text(info: CompileCacheInfo) -> str:
    lines = [f"{folder}{'' if folder.is_dir() else ' (absent)'}" for folder in info.dirs]
    lines += [f"  {entry.path.name}  {format_bytes(entry.bytes)}" for entry in info.files]
    lines.append(f"total: {info.file_count} file(s), {format_bytes(info.total_bytes)}")
    return "\n".join(lines)


def render_clean_text(result: CleanResult) -> str:
    return f"removed {len(result.removed)} file(s), freed {format_bytes(result.freed_bytes)}"
