"""The cache's layout and records: paths, completion markers, the trust file, locks.

See :mod:`zluda_runner.release.cache` for the layout and the guarantees; this
module only names things and reads/writes the small records, so the installer
(:mod:`~zluda_runner.release.install`), the integrity checks
(:mod:`~zluda_runner.release.integrity`) and the public API share one picture.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import click
import filelock

from zluda_runner.core.errors import CacheError
from zluda_runner.core.fsutil import TMP_PREFIX, atomic_write_json, file_kind
from zluda_runner.core.paths import CachePaths
from zluda_runner.core.replace import delete_all
from zluda_runner.core.serial import JsonMixin
from zluda_runner.core.version import JSON_SCHEMA_VERSION
from zluda_runner.release.unpack import archive_stem

MARKER_SUFFIX = ".complete.json"
PARTIAL_SUFFIX = ".part"
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._+-]")
#: a work folder's name in ``tmp/``: ``<release>@<mkdtemp's random part>`` (an install) or
#: ``<release>@removing-<random>`` (a clean or reinstall moving a folder aside)
_WORK_NAME = re.compile(r"^(?P<key>[A-Za-z0-9._+-]+)@(?:removing-)?[a-z0-9_]+$")


class ReleaseLike(Protocol):
    """What the cache needs to know about a manifest release."""

    id: str


@dataclass
class FileRecord(JsonMixin):
    """One entry of an installed release, as installed: what later uses check against."""

    path: str  # relative, POSIX
    kind: str  # "file" | "symlink"
    size: int = 0
    sha256: str | None = None  # files
    target: str | None = None  # symlinks
    mtime_ns: int = 0  # identity at install: a cheap check compares these ...
    ino: int = 0  # ... and hashes only a file whose identity changed


@dataclass
class Marker(JsonMixin):
    """Written last into ``releases/<release>/<stem>.complete.json``."""

    schema: int
    release_id: str
    asset: str
    url: str  # the upstream URL (the trust key)
    fetched_from: str  # the URL actually read, or the --archive path
    sha256: str
    hash_source: str  # "manifest" | "trust-file" | "trust-on-first-use"
    size: int
    fetched_at: str
    #: every file and link of the unpacked tree; None in markers written before it was recorded
    files: list[FileRecord] | None = None


@dataclass
class CacheEntry(JsonMixin):
    release_id: str
    asset: str
    path: Path
    archive: Path | None
    sha256: str
    hash_source: str
    url: str
    fetched_at: str
    bytes_on_disk: int


@dataclass
class CleanResult(JsonMixin):
    removed: list[Path]
    bytes_freed: int
    busy: list[str] = field(default_factory=list)  # releases another process is fetching: left alone


def safe_component(text: str, what: str = "name") -> str:
    """A file-name-safe form of a release id or asset stem."""
    clean = _UNSAFE_CHARS.sub("_", text.strip())
    if clean in ("", ".", ".."):
        raise CacheError(
            f"The {what} {text!r} cannot be used as a cache folder name.",
            hint="Fix the release id / asset name in the manifest.",
        )
    return clean


class CacheLayout(CachePaths):
    """Paths inside one cache folder: the shared names of :class:`CachePaths`, plus one release's
    archive, partial download, unpacked folder, marker and lock."""

    def archive_path(self, release_id: str, asset_name: str) -> Path:
        return self.downloads / safe_component(release_id, "release id") / safe_component(asset_name, "asset")

    def partial_path(self, release_id: str, asset_name: str) -> Path:
        """Where an interrupted download waits to be resumed (with a ``.json`` note beside it)."""
        archive = self.archive_path(release_id, asset_name)
        return archive.with_name(archive.name + PARTIAL_SUFFIX)

    def release_dir(self, release_id: str, asset_name: str) -> Path:
        stem = safe_component(archive_stem(asset_name), "asset")
        return self.releases / safe_component(release_id, "release id") / stem

    def marker_path(self, release_id: str, asset_name: str) -> Path:
        folder = self.release_dir(release_id, asset_name)
        return folder.with_name(folder.name + MARKER_SUFFIX)

    def lock_path(self, release_id: str) -> Path:
        return self.locks / f"{safe_component(release_id, 'release id')}.lock"

    def require_folder(self, *, writing: bool = False) -> None:
        """Raise :func:`root_fault`'s CacheError when the cache folder cannot be one (``writing``: its
        ``tmp/`` and ``locks/`` too; a reader needs only ``downloads/`` and ``releases/``)."""
        areas = (self.downloads, self.releases, *((self.tmp, self.locks) if writing else ()))
        fault = root_fault(self.root, areas)
        if fault is not None:
            raise fault


def root_fault(root: Path, areas: Sequence[Path] = ()) -> CacheError | None:
    """Why the cache folder ``root`` cannot be used as one, or None: it (or a folder above it) is a
    file, or a symbolic link to nothing, or one of the folders ``areas`` it keeps (``downloads/``,
    ``releases/``, ...) is a file. A folder that does not exist yet is fine (it is created)."""
    path = Path(root)
    while True:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            if os.path.islink(path):
                return _not_a_folder(root, path, "a symbolic link to nothing")
            if path.parent == path:
                return None
            path = path.parent
            continue
        except OSError:  # no permission, a loop ...: the write itself says what is wrong
            return None
        if not stat.S_ISDIR(st.st_mode):
            return _not_a_folder(root, path, file_kind(st.st_mode))
        if path != Path(root):
            return None
        for area in areas:
            try:
                mode = os.stat(area).st_mode
            except OSError:  # not there yet (created when needed), or a link to nothing (not entered)
                continue
            if not stat.S_ISDIR(mode):
                return _not_a_folder(root, area, file_kind(mode))
        return None


def _not_a_folder(root: Path, path: Path, what: str) -> CacheError:
    if path == Path(root):
        where = f"The cache folder {root} is {what}"
    elif path.parent == Path(root):
        where = f"The cache folder {root} cannot be used: its {path.name} folder, {path}, is {what}"
    else:
        where = f"The cache folder {root} cannot be made: {path} is {what}"
    return CacheError(
        f"{where}, not a folder; nothing was read or changed.",
        hint=f"Choose another cache location with {{opt:cache_dir}} or ZLUDA_RUNNER_CACHE, or move {path} "
        "away (zluda-runner then creates the folder).",
    )


# --------------------------------------------------------------------------- trust file


class TrustStore:
    """``trust.json``: SHA-256 recorded on first use, keyed by the asset's upstream URL."""

    def __init__(self, layout: CacheLayout) -> None:
        self.layout = layout

    def _read(self) -> dict[str, Any]:
        path = self.layout.trust_file
        self.layout.require_folder()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"schema": JSON_SCHEMA_VERSION, "assets": {}}
        except (OSError, ValueError) as exc:
            raise CacheError(
                f"The trust file {path} is unreadable ({exc}); the hashes it recorded cannot be checked.",
                hint="Restore it from a backup, or delete it to forget every trusted-on-first-use hash.",
            ) from exc
        if not isinstance(data, dict) or not isinstance(data.get("assets"), dict):
            raise CacheError(
                f"The trust file {path} does not have the expected shape (an object with 'assets').",
                hint="Delete it to forget every trusted-on-first-use hash.",
            )
        return data

    def get(self, url: str) -> str | None:
        entry = self._read()["assets"].get(url)
        sha256 = entry.get("sha256") if isinstance(entry, dict) else None
        return sha256 if isinstance(sha256, str) else None

    def record(self, url: str, name: str, sha256: str) -> None:
        self.layout.locks.mkdir(parents=True, exist_ok=True)
        lock = filelock.FileLock(self.layout.locks / "trust.lock")
        try:
            lock.acquire()
        except OSError as exc:
            raise lock_fault(Path(lock.lock_file), exc) from None
        try:
            data = self._read()
            data["assets"][url] = {"name": name, "sha256": sha256, "recorded_at": now()}
            write_json(self.layout.trust_file, data)
        finally:
            lock.release()

    def entries(self) -> dict[str, Any]:
        return dict(self._read()["assets"])


# --------------------------------------------------------------------------- helpers


def lock_fault(path: Path, exc: OSError) -> CacheError:
    """A lock file that cannot be used (a symbolic link, a folder, no permission) as a clear error."""
    what = "a symbolic link" if path.is_symlink() else (exc.strerror or str(exc))
    return CacheError(
        f"Cannot use the lock file {path}: {what}. zluda-runner never follows a link there (the lock "
        "could be moved elsewhere); nothing was changed.",
        hint=f"Remove {path} (zluda-runner makes a new one), or choose another cache with {{opt:cache_dir}}.",
    )


@contextlib.contextmanager
def release_lock(layout: CacheLayout, release_id: str, show: bool) -> Iterator[None]:
    try:
        layout.locks.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheError(
            f"Cannot create the cache folder {layout.locks}: {exc.strerror or exc}.",
            hint="Choose a writable cache with {opt:cache_dir} or ZLUDA_RUNNER_CACHE.",
        ) from exc
    path = layout.lock_path(release_id)
    lock = filelock.FileLock(path)
    try:
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            if show:
                click.echo(f"waiting for another zluda-run that is fetching {release_id} (lock {path})",
                           err=True)
            lock.acquire()
    except OSError as exc:  # filelock opens with O_NOFOLLOW: a symlink there is ELOOP
        raise lock_fault(path, exc) from None
    try:
        yield
    finally:
        lock.release()


def stale_work(layout: CacheLayout, release_id: str) -> list[Path]:
    """The work folders of ``release_id`` in ``tmp/`` (named as only zluda-runner names them, real
    folders, not links; nothing behind a symlinked ``tmp/``)."""
    key = safe_component(release_id, "release id")
    return [p for p in _work_folders(layout) if _work_key(p.name) == key]


def _work_key(name: str) -> str | None:
    match = _WORK_NAME.match(name)
    return match.group("key") if match else None


def _work_folders(layout: CacheLayout) -> list[Path]:
    if not real_dir(layout.tmp):
        return []
    return sorted(p for p in layout.tmp.iterdir() if _work_key(p.name) and real_dir(p))


def real_dir(path: Path) -> bool:
    """A folder itself, not a symlink to one (what the cache may enter without leaving itself)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _real_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def owned_keys(layout: CacheLayout) -> set[str]:
    """The releases the cache folder holds something of that zluda-runner recorded as its own:
    a completion marker, a partial download's note, a work folder. Whatever else is in
    ``downloads/``, ``releases/`` or ``tmp/`` is not ours (``--cache-dir`` may be any folder)."""
    keys: set[str] = set()
    for area in (layout.releases, layout.downloads):
        if not real_dir(area):
            continue
        for child in area.iterdir():
            if real_dir(child) and owned_entries(layout, child.name):
                keys.add(child.name)
    keys.update(k for k in (_work_key(p.name) for p in _work_folders(layout)) if k)
    return keys


def owned_entries(layout: CacheLayout, key: str) -> list[Path]:
    """What the cache holds for the release whose folder name is ``key``, as zluda-runner recorded it:
    each marker's unpacked folder, the marker and the verified archive it names; each partial download
    with its note; the work folders. ``releases/<key>`` or ``downloads/<key>`` holding nothing else is
    that folder itself (removed whole). Symlinked areas are not entered (never follow a link out)."""
    rel, dl = layout.releases / key, layout.downloads / key
    in_rel: list[Path] = []
    in_dl: list[Path] = []
    rel_ok = real_dir(layout.releases) and real_dir(rel)
    dl_ok = real_dir(layout.downloads) and real_dir(dl)
    if rel_ok:
        for marker_path in sorted(rel.glob(f"*{MARKER_SUFFIX}")):
            marker = read_marker(marker_path) if _real_file(marker_path) else None
            if marker is None or safe_component(marker.release_id, "release id") != key:
                continue
            folder = layout.release_dir(marker.release_id, marker.asset)
            if folder.with_name(folder.name + MARKER_SUFFIX) != marker_path:
                continue  # a marker naming another asset's folder: not a record of this one
            in_rel += [marker_path, folder]  # the marker first: a folder without it is not trusted
            if dl_ok:
                in_dl.append(layout.archive_path(marker.release_id, marker.asset))
        in_rel += [p for p in sorted(rel.glob(f"{TMP_PREFIX}*")) if _real_file(p)]
    if dl_ok:
        for note in sorted(dl.glob(f"*{PARTIAL_SUFFIX}.json")):
            if _real_file(note):
                in_dl += [note.with_name(note.name[: -len(".json")]), note]
        in_dl += [p for p in sorted(dl.glob(f"{TMP_PREFIX}*")) if _real_file(p)]
    out: list[Path] = []
    for area, entries in ((rel, in_rel), (dl, in_dl)):
        present = [p for p in dict.fromkeys(entries) if p.exists() or p.is_symlink()]
        if present and set(area.iterdir()) <= set(present):
            out.append(area)  # nothing but ours in it: the folder goes whole
        else:
            out.extend(present)
    return out + stale_work(layout, key)


def drop_empty_areas(layout: CacheLayout, key: str) -> None:
    """Remove ``releases/<key>`` and ``downloads/<key>`` if nothing is left in them (never what is)."""
    for area in (layout.releases, layout.downloads):
        if real_dir(area) and real_dir(area / key):
            with contextlib.suppress(OSError):
                (area / key).rmdir()


def sweep_stale(layout: CacheLayout, release_id: str) -> None:
    """Remove work folders a killed process left (we hold the release lock), and what a clean or a
    reinstall could not delete then (Windows: a file still in use; it stays until it is free)."""
    for leftover in stale_work(layout, release_id):
        delete_all(leftover)


def remove(path: Path, removed: list[Path]) -> int:
    if not (path.exists() or path.is_symlink()):
        return 0
    size = tree_size(path) if path.is_dir() and not path.is_symlink() else path.lstat().st_size
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    removed.append(path)
    return size


def tree_size(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def read_marker(path: Path) -> Marker | None:
    try:
        return Marker.from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_json(path: Path, data: Any) -> None:
    """A cache record, written atomically and durably (a crash leaves the old one or the new one)."""
    atomic_write_json(path, data, durable=True)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
