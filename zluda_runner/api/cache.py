"""The release cache and ZLUDA's compile cache: :func:`cache_path`, :func:`list_cache`,
:func:`clean_cache`, :func:`compile_cache` and :func:`clean_compile_cache`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from zluda_runner.api.options import Options, caller_errors, to_settings
from zluda_runner.core.argcheck import checked

if TYPE_CHECKING:
    from zluda_runner.host.compile_cache import CleanResult as CompileCleanResult
    from zluda_runner.host.compile_cache import CompileCacheInfo
    from zluda_runner.release.cache import CacheEntry, CleanResult, PartialDownload


@dataclass(frozen=True)
class CachePath:
    """Where the cache is (``cache_dir``), and for a release (``release``, its manifest id) its unpacked
    folder(s) (``paths``; the cache folder itself when no release was asked for)."""

    cache_dir: Path
    release: str | None
    paths: tuple[Path, ...]


@dataclass(frozen=True)
class CacheListing:
    """The cache's contents.

    Attributes:
        cache_dir: the cache folder.
        releases: each complete release (its id, asset, folder, SHA-256 and where that came from).
        partial: the interrupted downloads the next fetch resumes.
        trusted: the SHA-256 recorded on first use, by asset URL.
    """

    cache_dir: Path
    releases: tuple[CacheEntry, ...]
    partial: tuple[PartialDownload, ...]
    trusted: Mapping[str, object]


@dataclass(frozen=True)
class CacheCleaned:
    """What :func:`clean_cache` removed: ``release`` (None: every release), and ``result`` (``removed``,
    ``bytes_freed``, and ``busy``: the releases another process was fetching, left alone)."""

    release: str | None
    result: CleanResult


@checked
def cache_path(version: str | None = None, options: Options | None = None) -> CachePath:
    """The cache folder, or the unpacked folder(s) of release ``version`` (id, version or tag) in it;
    nothing is downloaded. :func:`cached_release` is the same for a caller that only wants the folders.

    Raises:
        CacheError: the release is not in the cache, or the cache folder is a file (or under one).
        ManifestError: no release of that name.
    """
    from zluda_runner.release.cache import check_cache_folder
    from zluda_runner.release.obtain import cached_folders

    settings = to_settings(options)
    if version is None:
        with caller_errors():  # a cache "folder" that is a file is no place to point anyone at
            check_cache_folder(settings.cache_dir)
        return CachePath(settings.cache_dir, None, (settings.cache_dir,))
    with caller_errors():
        release, folders = cached_folders(settings.manifest, settings.cache_dir, version)
    return CachePath(settings.cache_dir, release, tuple(folders))


@checked
def list_cache(options: Options | None = None) -> CacheListing:
    """The releases in the cache, the partial downloads the next fetch resumes, and the trusted hashes.

    Raises:
        CacheError: the cache folder cannot be read.
    """
    from zluda_runner.release.cache import CacheLayout, TrustStore, cache_contents

    settings = to_settings(options)
    with caller_errors():
        entries, partial = cache_contents(settings.cache_dir)
        trusted = TrustStore(CacheLayout(settings.cache_dir)).entries()
    return CacheListing(settings.cache_dir, tuple(entries), tuple(partial), MappingProxyType(trusted))


@checked
def clean_cache(version: str | None = None, options: Options | None = None) -> CacheCleaned:
    """Remove release ``version`` from the cache, or every release; the trust file is kept, and a release
    another process is fetching is left alone (``cleaned.result.busy``).

    Raises:
        ManifestError: no release of that name (in the manifest or the cache). CacheError.
    """
    from zluda_runner.release.cache import clean_cache as clean
    from zluda_runner.release.obtain import release_id_for

    settings = to_settings(options)
    with caller_errors():
        release = None if version is None else release_id_for(settings.manifest, settings.cache_dir,
                                                                version)
        return CacheCleaned(release, clean(settings.cache_dir, release))


@checked
def compile_cache() -> CompileCacheInfo:
    """ZLUDA's own compile cache (``<user cache>/ZLUDA|zluda/ComputeCache/zluda*.db``): its folders,
    files and total size. First runs of a workload fill it (minutes); later runs start fast."""
    from zluda_runner.host.compile_cache import inspect_compile_cache

    return inspect_compile_cache()


@checked
def clean_compile_cache() -> CompileCleanResult:
    """Delete ZLUDA's compile cache databases (``zluda*.db*``) and nothing else; ZLUDA rebuilds them on
    the next run. A database in use is listed in ``result.failed`` (``result.exit_code`` is then 1)."""
    from zluda_runner.host.compile_cache import clean_compile_cache as clean

    return clean()
