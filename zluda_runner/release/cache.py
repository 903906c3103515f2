"""The release cache: verified archives, unpacked releases, locks and the trust file.

Layout (``<cache>`` is ``--cache-dir`` / ``$ZLUDA_RUNNER_CACHE`` / the user cache)::

    <cache>/
      downloads/<release>/<asset-name>          verified archives (zip / tar.gz)
      releases/<release>/<asset-stem>/          the unpacked release (what ensure_release returns)
      releases/<release>/<asset-stem>.complete.json
                                                marker, written last: sha256, url, time, ...;
                                                a folder without it is not trusted
      tmp/<release>@<random>/                   work in progress (temporary archive + tree)
      locks/<release>.lock                      per-release cross-process lock
      locks/trust.lock                          guards trust.json
      trust.json                                SHA-256 recorded by --trust-on-first-use

``<release>`` is the manifest release id and ``<asset-stem>`` the asset name
without ``.zip`` / ``.tar.gz``, both with characters outside ``[A-Za-z0-9._+-]``
replaced by ``_``. The unpacked folder mirrors the archive exactly (ZLUDA's
archives hold a top-level ``zluda/``); the manifest's ``archive_root`` says where
the libraries are, and :func:`zluda_runner.release.manifest.resolve_release_root` finds them.

Every change is atomic: a download is written and verified in ``tmp/``, unpacked
there, then renamed into ``downloads/`` and ``releases/`` and only then is the
marker written. Any failure removes the work folder, so the cache never holds a
partial file or a half-unpacked tree. Leftovers of a killed process are swept
the next time that release's lock is taken. Two processes fetching one release
serialise on its lock: the second waits, then finds it cached.

Nothing is unpacked without a SHA-256 to check it against: the manifest's, else
the one ``trust.json`` recorded. With neither, the fetch is refused unless the
user passes ``trust_on_first_use`` (``--trust-on-first-use``): the computed
hash is then recorded (keyed by the asset's upstream URL) and every later
fetch of that asset must match it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import click
import filelock

from zluda_runner import JSON_SCHEMA_VERSION
from zluda_runner.core.errors import ArchiveError, CacheError, ChecksumError, FetchError, UnsafeArchiveError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.fetch import (
    AssetLike,
    RetryPolicy,
    download,
    hash_file,
    mirror_url,
    normalize_sha256,
)
from zluda_runner.release.unpack import archive_format, archive_stem, safe_extract

MARKER_SUFFIX = ".complete.json"
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._+-]")


class ReleaseLike(Protocol):
    """What the cache needs to know about a manifest release."""

    id: str


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


@dataclass(frozen=True)
class CacheLayout:
    """Paths inside one cache folder (see the module docstring)."""

    root: Path

    @property
    def downloads(self) -> Path:
        return self.root / "downloads"

    @property
    def releases(self) -> Path:
        return self.root / "releases"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    @property
    def trust_file(self) -> Path:
        return self.root / "trust.json"

    def archive_path(self, release_id: str, asset_name: str) -> Path:
        return self.downloads / safe_component(release_id, "release id") / safe_component(asset_name, "asset")

    def release_dir(self, release_id: str, asset_name: str) -> Path:
        stem = safe_component(archive_stem(asset_name), "asset")
        return self.releases / safe_component(release_id, "release id") / stem

    def marker_path(self, release_id: str, asset_name: str) -> Path:
        folder = self.release_dir(release_id, asset_name)
        return folder.with_name(folder.name + MARKER_SUFFIX)

    def lock_path(self, release_id: str) -> Path:
        return self.locks / f"{safe_component(release_id, 'release id')}.lock"


# --------------------------------------------------------------------------- trust file


class TrustStore:
    """``trust.json``: SHA-256 recorded on first use, keyed by the asset's upstream URL."""

    def __init__(self, layout: CacheLayout) -> None:
        self.layout = layout

    def _read(self) -> dict[str, Any]:
        path = self.layout.trust_file
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
        if isinstance(entry, dict) and isinstance(entry.get("sha256"), str):
            return entry["sha256"]
        return None

    def record(self, url: str, name: str, sha256: str) -> None:
        self.layout.locks.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(self.layout.locks / "trust.lock"):
            data = self._read()
            data["assets"][url] = {"name": name, "sha256": sha256, "recorded_at": _now()}
            _write_json_atomic(self.layout.trust_file, data)

    def entries(self) -> dict[str, Any]:
        return dict(self._read()["assets"])


# --------------------------------------------------------------------------- public API


def cached_release_dir(cache_dir: Path, release: ReleaseLike, asset: AssetLike) -> Path | None:
    """The unpacked folder of ``asset`` if the cache holds a complete, matching copy."""
    layout = CacheLayout(Path(cache_dir))
    marker = _read_marker(layout.marker_path(release.id, asset.name))
    folder = layout.release_dir(release.id, asset.name)
    if marker is None or not folder.is_dir():
        return None
    if marker.url != asset.url:
        return None
    if asset.sha256:
        try:
            if marker.sha256 != normalize_sha256(asset.sha256):
                return None
        except ChecksumError:
            return None
    else:
        trusted = TrustStore(layout).get(asset.url)
        if trusted is not None and trusted != marker.sha256:
            return None
    return folder


def ensure_release(
    release: ReleaseLike,
    asset: AssetLike,
    cache_dir: Path,
    *,
    trust_on_first_use: bool = False,
    archive: Path | None = None,
    progress: bool | None = None,
    retry: RetryPolicy | None = None,
) -> Path:
    """Return the unpacked folder of ``asset``, downloading and unpacking only if needed.

    ``archive`` installs a file the user downloaded by hand instead of
    downloading (verified like a download). ``progress=None`` shows a bar when
    stderr is a terminal. Raises FetchError / ChecksumError / ArchiveError /
    UnsafeArchiveError / CacheError; on any of them the cache is left as it was.
    """
    layout = CacheLayout(Path(cache_dir))
    found = cached_release_dir(layout.root, release, asset)
    if found is not None:
        return found
    show = sys.stderr.isatty() if progress is None else progress
    with _release_lock(layout, release.id, show):
        found = cached_release_dir(layout.root, release, asset)  # another process may have finished
        if found is not None:
            return found
        _sweep_stale(layout, release.id)
        return _install(layout, release, asset, trust_on_first_use, archive, show, retry)


def list_cache(cache_dir: Path) -> list[CacheEntry]:
    """Every complete release in the cache."""
    layout = CacheLayout(Path(cache_dir))
    entries: list[CacheEntry] = []
    if not layout.releases.is_dir():
        return entries
    for marker_path in sorted(layout.releases.glob(f"*/*{MARKER_SUFFIX}")):
        marker = _read_marker(marker_path)
        folder = marker_path.with_name(marker_path.name[: -len(MARKER_SUFFIX)])
        if marker is None or not folder.is_dir():
            continue
        archive = layout.archive_path(marker.release_id, marker.asset)
        size = _tree_size(folder) + (archive.stat().st_size if archive.is_file() else 0)
        entries.append(
            CacheEntry(
                release_id=marker.release_id,
                asset=marker.asset,
                path=folder,
                archive=archive if archive.is_file() else None,
                sha256=marker.sha256,
                hash_source=marker.hash_source,
                url=marker.url,
                fetched_at=marker.fetched_at,
                bytes_on_disk=size,
            )
        )
    return entries


def clean_cache(cache_dir: Path, release_id: str | None = None) -> CleanResult:
    """Remove one release (downloads, unpacked folders, leftovers) or all of them.

    The trust file, locks and other areas' folders (e.g. ``native/``) are kept.
    Each release is removed under its lock, so a fetch running in another process
    never loses its work folder: cleaning one release waits for that fetch;
    cleaning all of them skips the releases being fetched and lists them in ``busy``.
    """
    layout = CacheLayout(Path(cache_dir))
    removed: list[Path] = []
    freed = 0
    if release_id is not None:
        with _release_lock(layout, release_id, False):
            for target in _release_paths(layout, safe_component(release_id, "release id")):
                freed += _remove(target, removed)
        return CleanResult(removed, freed)
    keys: set[str] = set()
    for top in (layout.releases, layout.downloads, layout.tmp):
        if top.is_dir():
            keys.update(child.name.split("@", 1)[0] for child in top.iterdir())
    busy: list[str] = []
    for key in sorted(keys):
        if key in ("", ".", ".."):
            continue
        lock = filelock.FileLock(layout.lock_path(key))
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            busy.append(key)
            continue
        try:
            for target in _release_paths(layout, key):
                freed += _remove(target, removed)
        finally:
            lock.release()
    return CleanResult(removed, freed, busy)


def _release_paths(layout: CacheLayout, key: str) -> list[Path]:
    """Everything the cache holds for the release whose folder name is ``key``."""
    stray = [layout.tmp / key] if (layout.tmp / key).exists() else []
    return [layout.releases / key, layout.downloads / key, *_stale_work(layout, key), *stray]


# --------------------------------------------------------------------------- installing


@dataclass
class _Expected:
    sha256: str | None
    source: str  # "manifest" | "trust-file" | "trust-on-first-use"


def _expected_hash(
    layout: CacheLayout, release: ReleaseLike, asset: AssetLike, tofu: bool, archive: Path | None
) -> _Expected:
    if asset.sha256:
        return _Expected(normalize_sha256(asset.sha256), "manifest")
    trusted = TrustStore(layout).get(asset.url)
    if trusted is not None:
        return _Expected(trusted, "trust-file")
    if tofu:
        return _Expected(None, "trust-on-first-use")
    what = f"the file {archive} was not installed" if archive else "nothing was downloaded"
    raise FetchError(
        f"The manifest does not know the SHA-256 of {asset.name} ({asset.url}) of release {release.id}, "
        f"and zluda-runner does not install unverified binaries; {what}.",
        hint="If you trust this source, run again with `--trust-on-first-use`: the hash seen now is recorded "
        f"in {layout.trust_file} and every later fetch of this asset must match it.",
    )


def _install(
    layout: CacheLayout,
    release: ReleaseLike,
    asset: AssetLike,
    tofu: bool,
    archive: Path | None,
    show: bool,
    retry: RetryPolicy | None,
) -> Path:
    expected = _expected_hash(layout, release, asset, tofu, archive)
    fmt = asset.format if asset.format else archive_format(asset.name)
    final_archive = layout.archive_path(release.id, asset.name)
    final_dir = layout.release_dir(release.id, asset.name)
    marker_path = layout.marker_path(release.id, asset.name)
    layout.tmp.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{safe_component(release.id, 'release id')}@", dir=layout.tmp))
    try:
        staged, fetched_from, sha, size = _stage_archive(
            layout, release, asset, archive, expected, work, show, retry
        )
        tree = work / "tree"
        try:
            safe_extract(staged, fmt, tree)
        except UnsafeArchiveError as exc:
            exc.message = f"{exc.message} (archive from {fetched_from})"
            raise
        except ArchiveError as exc:
            raise _unreadable(exc, layout, asset, fmt, fetched_from, sha, expected) from exc
        final_archive.parent.mkdir(parents=True, exist_ok=True)
        final_dir.parent.mkdir(parents=True, exist_ok=True)
        marker_path.unlink(missing_ok=True)
        _remove(final_dir, [])  # an incomplete leftover (it had no valid marker)
        if staged != final_archive:
            os.replace(staged, final_archive)
        os.replace(tree, final_dir)
        if expected.source == "trust-on-first-use":
            TrustStore(layout).record(asset.url, asset.name, sha)
        marker = Marker(
            schema=JSON_SCHEMA_VERSION,
            release_id=release.id,
            asset=asset.name,
            url=asset.url,
            fetched_from=fetched_from,
            sha256=sha,
            hash_source=expected.source,
            size=size,
            fetched_at=_now(),
        )
        _write_json_atomic(marker_path, marker.to_dict())
        return final_dir
    except BaseException:
        # leave the cache as it was: no archive, no folder, no marker of this asset
        marker_path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            _remove(final_dir, [])
        final_archive.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _stage_archive(
    layout: CacheLayout,
    release: ReleaseLike,
    asset: AssetLike,
    archive: Path | None,
    expected: _Expected,
    work: Path,
    show: bool,
    retry: RetryPolicy | None,
) -> tuple[Path, str, str, int]:
    """Put a verified archive in place for unpacking: (path, source, sha256, size)."""
    if archive is not None:
        staged = work / safe_component(asset.name, "asset")
        sha, size = _copy_verified(archive, staged, asset, expected)
        return staged, str(archive), sha, size
    cached = layout.archive_path(release.id, asset.name)
    if expected.sha256 and cached.is_file():
        sha, size = hash_file(cached)
        if sha == expected.sha256:
            return cached, asset.url, sha, size
        cached.unlink()
    url = mirror_url(asset.url)
    staged = work / safe_component(asset.name, "asset")
    try:
        result = download(
            url,
            staged,
            expected_sha256=expected.sha256,
            expected_size=asset.size,
            label=asset.name,
            progress=show,
            retry=retry,
            upstream_url=asset.url,
        )
    except ChecksumError as exc:
        if expected.source == "trust-file":
            exc.message += (
                f" The expected SHA-256 is the one recorded on first use in {layout.trust_file}."
            )
            exc.hint = (
                "The file changed since you first trusted it: do not use it unless you know why. If upstream "
                f"re-published it on purpose, remove its entry ({asset.url}) from {layout.trust_file} and "
                "fetch again with --trust-on-first-use."
            )
        raise
    return staged, url, result.sha256, result.size


def _unreadable(
    exc: ArchiveError,
    layout: CacheLayout,
    asset: AssetLike,
    fmt: str,
    fetched_from: str,
    sha: str,
    expected: _Expected,
) -> ArchiveError:
    """The unpacking error, told with where the archive came from and what was expected of it."""
    message = (
        f"{exc.message} The archive came from {fetched_from} (expected {asset.name}, a {fmt} archive; "
        f"its sha256 is {sha}); nothing was cached."
    )
    if expected.source == "manifest":
        hint = (
            f"The file matches the manifest's SHA-256 of {asset.url}, so downloading it again will not help: "
            "the manifest entry may be wrong (check its format and hash); or install a working copy "
            "with `--archive FILE`."
        )
    elif expected.source == "trust-file":
        hint = (
            f"The file matches the hash recorded on first use in {layout.trust_file}, so that record may be "
            "of a broken download: remove its entry, then fetch again with --trust-on-first-use; or "
            "install a working copy with `--archive FILE`."
        )
    else:
        hint = (
            f"No hash was known to check it, so it may have been cut short: fetch it again; nothing was "
            f"recorded in {layout.trust_file}. Or download {asset.url} by hand and pass `--archive FILE`."
        )
    return ArchiveError(message, hint=hint)


def _copy_verified(source: Path, staged: Path, asset: AssetLike, expected: _Expected) -> tuple[str, int]:
    if not source.is_file():
        raise FetchError(
            f"The archive {source} given with --archive does not exist or is not a file.",
            hint=f"Pass the path of the downloaded {asset.name}.",
        )
    result = download(source.resolve().as_uri(), staged, progress=False, upstream_url=asset.url)
    if expected.sha256 is not None and result.sha256 != expected.sha256:
        staged.unlink(missing_ok=True)
        what = "the manifest's" if expected.source == "manifest" else "the hash recorded on first use"
        raise ChecksumError(
            f"{source} has sha256 {result.sha256}, but {asset.name} ({asset.url}) must have {what} "
            f"sha256 {expected.sha256}; nothing was installed.",
            hint=f"Check that you downloaded {asset.url} itself (not another asset or version), "
            "and download it again if it was cut short.",
        )
    if asset.size is not None and result.size != asset.size and expected.sha256 is None:
        staged.unlink(missing_ok=True)
        raise ChecksumError(
            f"{source} has {result.size} bytes, but {asset.name} ({asset.url}) has {asset.size}; "
            "nothing was installed.",
            hint=f"Download {asset.url} again; the file seems cut short or is another asset.",
        )
    return result.sha256, result.size


# --------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def _release_lock(layout: CacheLayout, release_id: str, show: bool) -> Iterator[None]:
    try:
        layout.locks.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheError(
            f"Cannot create the cache folder {layout.locks}: {exc.strerror or exc}.",
            hint="Choose a writable cache with --cache-dir or ZLUDA_RUNNER_CACHE.",
        ) from exc
    path = layout.lock_path(release_id)
    lock = filelock.FileLock(path)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        if show:
            click.echo(f"waiting for another zluda-run that is fetching {release_id} (lock {path})", err=True)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _stale_work(layout: CacheLayout, release_id: str) -> list[Path]:
    if not layout.tmp.is_dir():
        return []
    return sorted(layout.tmp.glob(f"{safe_component(release_id, 'release id')}@*"))


def _sweep_stale(layout: CacheLayout, release_id: str) -> None:
    """Remove work folders a killed process left (we hold the release lock)."""
    for leftover in _stale_work(layout, release_id):
        _remove(leftover, [])


def _remove(path: Path, removed: list[Path]) -> int:
    if not (path.exists() or path.is_symlink()):
        return 0
    size = _tree_size(path) if path.is_dir() and not path.is_symlink() else path.lstat().st_size
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    removed.append(path)
    return size


def _tree_size(folder: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _read_marker(path: Path) -> Marker | None:
    try:
        return Marker.from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, sort_keys=True)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
