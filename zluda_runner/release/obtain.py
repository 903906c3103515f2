"""The library calls behind ``zluda-run fetch`` and ``zluda-run cache path``: manifest in, result out.

:func:`fetch` installs or checks the release and asset the resolver chose
(:func:`~zluda_runner.release.cache.fetch_release`) and says where its libraries
are. :func:`cached_folders` answers ``cache path VERSION``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zluda_runner.core.errors import CacheError, ManifestError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.cache import (
    FetchOutcome,
    check_cache_folder,
    fetch_release,
    list_cache,
    named_release,
)
from zluda_runner.release.manifest import load_current_manifest, resolve_release_root
from zluda_runner.release.selection import Choice
from zluda_runner.release.store import CacheLayout, safe_component


@dataclass
class Fetched(JsonMixin):
    """A fetch's result for the views: the library folder (``path``) and what was done."""

    release: str
    asset: str
    path: Path  # where the libraries are (the manifest's archive_root inside ``unpacked``)
    unpacked: Path
    sha256: str
    hash_source: str
    url: str
    action: str  # downloaded | installed-from-archive | cached
    verified: str
    notes: list[str]

    @classmethod
    def of(cls, outcome: FetchOutcome, root: Path) -> Fetched:
        return cls(outcome.release_id, outcome.asset, root, outcome.unpacked, outcome.sha256,
                   outcome.hash_source, outcome.url, outcome.action, outcome.verified, list(outcome.notes))


def fetch(
    choice: Choice,
    cache_dir: Path,
    *,
    archive: Path | None = None,
    trust_on_first_use: bool = False,
    reinstall: bool = False,
    progress: bool | None = None,
) -> Fetched:
    """Install or check, and locate, the release the resolver chose (see the module doc)."""
    archive = archive.expanduser() if archive is not None else None
    outcome = fetch_release(choice.release, choice.asset, cache_dir, trust_on_first_use=trust_on_first_use,
                            archive=archive, reinstall=reinstall, progress=progress)
    return Fetched.of(outcome, resolve_release_root(outcome.unpacked, choice.asset))


def release_id_for(manifest_path: Path | None, cache_dir: Path, version: str) -> str:
    """A manifest release's id for VERSION, or VERSION itself when the cache holds such an id."""
    version = named_release(version)
    check_cache_folder(cache_dir)
    try:
        return load_current_manifest(manifest_path, cache_dir).find(version).id
    except ManifestError:
        layout = CacheLayout(cache_dir)
        key = safe_component(version, "release id")
        if (layout.releases / key).exists() or (layout.downloads / key).exists():
            return version
        raise


def cached_folders(manifest_path: Path | None, cache_dir: Path, version: str) -> tuple[str, list[Path]]:
    """The unpacked folder(s) of release VERSION in the cache; CacheError when there is none."""
    release_id = release_id_for(manifest_path, cache_dir, version)
    hits = [e.path for e in list_cache(cache_dir) if e.release_id == release_id]
    if not hits:
        raise CacheError(
            f"Release {release_id} is not in the cache {cache_dir}.",
            hint=f"Fetch it with {{cmd:fetch {version}}}.",
        )
    return release_id, hits
