"""ZLUDA's own compile cache: where it is, how big, and cleaning it.

ZLUDA compiles a program's PTX to AMD code on first use and keeps the result in a
SQLite database under the user cache folder of the Rust ``dirs`` crate
(``dirs::cache_dir()``: ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux,
``%LOCALAPPDATA%`` on Windows, ``~/Library/Caches`` on macOS):

- ZLUDA 3 and the lshqqytiger fork: ``<cache>/ZLUDA/ComputeCache/zluda.db``
  (``zluda/src/impl/mod.rs``, ``create_default_cache``);
- the rewrite (v4+): ``<cache>/zluda/ComputeCache/zluda.db``, in WAL mode, so
  ``zluda.db-wal`` / ``zluda.db-shm`` sit next to it (``zluda_cache/src/lib.rs``); v6+ writes
  ``zluda2.db`` there instead ("zluda.db might be in use by older versions of ZLUDA":
  vosen/ZLUDA ``zluda_cache/src/lib.rs``@a7bf2ba2, ``create_cache_dir_and_get_path``).

Only files named ``zluda*.db*`` in those folders are ever counted or removed.

MIOpen (cuDNN calls through ZLUDA) keeps its own per-user caches (:func:`miopen_cache_dirs`), which go
stale when MIOpen or the GPU changes: the kernel cache ``~/.cache/miopen`` and the user databases
``~/.config/miopen`` on Linux (MIOpen's docs, "Setting up locations" / "Kernel cache":
rocm.docs.amd.com/projects/MIOpen, ``MIOPEN_CUSTOM_CACHE_DIR`` / ``MIOPEN_USER_DB_PATH`` move them),
``%USERPROFILE%\\.miopen\\cache`` on Windows (MIOpen's Windows ``config.h``:
``MIOPEN_CACHE_DIR "$USERPROFILE\\\\.miopen\\\\cache\\\\"``). :func:`clear_caches` removes from them only
MIOpen's own database files (:data:`MIOPEN_FILE_SUFFIXES`), bounded, and never through a link.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core import exitcodes
from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.version import JSON_SCHEMA_VERSION

CACHE_SUBDIRS = (("ZLUDA", "ComputeCache"), ("zluda", "ComputeCache"))
CACHE_FILE_GLOB = "zluda*.db*"
# MIOpen's user files: kernel cache (<arch>_<CUs>.ukdb, SQLite), performance and find databases
MIOPEN_FILE_SUFFIXES = (".ukdb", ".ukdb-journal", ".ukdb-wal", ".ukdb-shm", ".udb", ".udb-journal",
                        ".udb-wal", ".udb-shm", ".ufdb.txt", ".updb.txt")
MAX_CLEAR_DEPTH = 4  # ~/.cache/miopen/<version>/<file>
MAX_CLEAR_ENTRIES = 20_000


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


# --------------------------------------------------------------------------- clearing on request


def miopen_cache_dirs(
    platform: str | None = None, env: Mapping[str, str] | None = None, home: Path | None = None
) -> list[tuple[Path, int]]:
    """MIOpen's per-user cache folders on ``platform``, each with how many of its trailing parts are
    MIOpen's own (none of them may be a link for :func:`clear_caches` to touch it)."""
    platform = platform or sys.platform
    env = os.environ if env is None else env
    home = home or Path.home()
    dirs: list[tuple[Path, int]] = []
    for var in ("MIOPEN_CUSTOM_CACHE_DIR", "MIOPEN_USER_DB_PATH"):
        value = env.get(var)
        if value and Path(value).is_absolute():
            dirs.append((Path(value), 1))
    if platform == "win32":
        profile = Path(env.get("USERPROFILE") or home)
        dirs.append((profile / ".miopen" / "cache", 2))
    else:
        dirs += [(home / ".cache" / "miopen", 1), (home / ".config" / "miopen", 1)]
    return dirs


@dataclass(frozen=True)
class ClearedCaches(JsonMixin):
    """What :func:`clear_caches` removed (every file by path), what it left alone and why."""

    removed: tuple[CacheFile, ...] = ()
    skipped: tuple[str, ...] = ()  # "FOLDER: why"
    failed: tuple[str, ...] = ()

    @property
    def freed_bytes(self) -> int:
        return sum(f.bytes for f in self.removed)


def _is_link(path: Path) -> bool:
    isjunction = getattr(os.path, "isjunction", None)  # Windows junctions (Python 3.12+)
    return path.is_symlink() or bool(isjunction is not None and isjunction(path))


def _refusal(folder: Path, own_parts: int, home: Path | None) -> str | None:
    """Why ``folder`` must not be cleared, or None: it is a link (or one of its own parts is), a
    filesystem root or the home folder itself."""
    if not folder.is_absolute() or folder == Path(folder.anchor) or (home is not None and folder == home):
        return "not a cache folder (a root, the home folder or a relative path): left alone"
    part = folder
    for _ in range(own_parts):
        if _is_link(part):
            return f"{part} is a link: left alone (clear it where it points, by hand)"
        part = part.parent
    return None


def _matching_files(folder: Path, wanted: Callable[[str], bool]) -> tuple[list[Path], bool]:
    """Regular files (never links) under ``folder`` whose names ``wanted`` accepts, at most
    :data:`MAX_CLEAR_DEPTH` deep; and whether the walk stopped at :data:`MAX_CLEAR_ENTRIES`."""
    found: list[Path] = []
    seen = 0
    stack = [(folder, 0)]
    while stack:
        current, depth = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_CLEAR_ENTRIES:
                return found, True
            path = Path(entry.path)
            if _is_link(path):
                continue
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 < MAX_CLEAR_DEPTH:
                    stack.append((path, depth + 1))
            elif entry.is_file(follow_symlinks=False) and wanted(entry.name):
                found.append(path)
    return sorted(found), False


def _is_miopen_file(name: str) -> bool:
    return name.lower().endswith(MIOPEN_FILE_SUFFIXES)


def _is_zluda_file(name: str) -> bool:
    return fnmatch.fnmatch(name, CACHE_FILE_GLOB)


def clear_caches(
    platform: str | None = None, env: Mapping[str, str] | None = None, home: Path | None = None, *,
    zluda: bool = True, miopen: bool = True,
) -> ClearedCaches:
    """Remove ZLUDA's compile cache files (``zluda*.db*`` in its ComputeCache folders, top level only)
    and MIOpen's user cache files (:data:`MIOPEN_FILE_SUFFIXES`, :data:`MAX_CLEAR_DEPTH` deep), and
    nothing else: never a folder, never a link, nothing in a folder that is (or sits under one of its
    own parts that is) a link. ZLUDA and MIOpen rebuild them on the next run (slow first run again)."""
    targets: list[tuple[Path, int, Callable[[str], bool], int]] = []
    if zluda:
        targets += [(d, 2, _is_zluda_file, 1) for d in compile_cache_dirs(platform, env, home)]
    if miopen:
        mi = miopen_cache_dirs(platform, env, home)
        targets += [(d, own, _is_miopen_file, MAX_CLEAR_DEPTH) for d, own in mi]
    removed: list[CacheFile] = []
    skipped: list[str] = []
    failed: list[str] = []
    seen: set[str] = set()
    for folder, own, wanted, depth in targets:
        if str(folder) in seen or not (folder.is_dir() or _is_link(folder)):
            continue
        seen.add(str(folder))
        why = _refusal(folder, own, home)
        if why is not None:
            skipped.append(f"{folder}: {why}")
            continue
        if depth == 1:
            try:
                listed = sorted(folder.iterdir())
            except OSError:
                listed = []
            files = [p for p in listed if not _is_link(p) and p.is_file() and wanted(p.name)]
            cut = False
        else:
            files, cut = _matching_files(folder, wanted)
        if cut:
            skipped.append(f"{folder}: more than {MAX_CLEAR_ENTRIES} entries; the rest left alone")
        for path in files:
            try:
                size = path.stat().st_size
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:  # a database in use (Windows locks it)
                failed.append(f"{path}: {exc.strerror or exc}")
                continue
            removed.append(CacheFile(path=path, bytes=size))
    return ClearedCaches(tuple(removed), tuple(skipped), tuple(failed))
