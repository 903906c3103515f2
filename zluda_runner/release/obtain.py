"""The library calls behind ``zluda-run fetch`` and ``zluda-run cache path``: manifest in, result out.

:func:`fetch` picks the release and asset (by a hand-downloaded file's name
when that is unambiguous, else the selection for the constraints), installs or
checks it (:func:`~zluda_runner.release.cache.fetch_release`) and says where
its libraries are. :func:`cached_folders` answers ``cache path VERSION``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zluda_runner.core.errors import CacheError, ManifestError, SelectionError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.cache import (
    FetchOutcome,
    check_cache_folder,
    fetch_release,
    list_cache,
    named_release,
)
from zluda_runner.release.manifest import (
    Asset,
    Manifest,
    Release,
    load_current_manifest,
    resolve_release_root,
)
from zluda_runner.release.selection import select_asset
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


def pick(
    manifest: Manifest,
    version: str | None,
    os_name: str | None,
    hip: str | None,
    cuda: int | None,
    archive: Path | None,
) -> tuple[Release, Asset]:
    """The release + asset to fetch: by the hand-downloaded file's name when that is
    unambiguous, else the selection for the constraints (and VERSION, if given)."""
    if archive is not None:
        releases = [manifest.find(version)] if version else manifest.releases
        named = [(r, a) for r in releases for a in r.assets
                 if a.name == archive.name and (os_name is None or a.os == os_name)]
        if len(named) == 1:
            return named[0]
        if len(named) > 1:  # the same file name in several releases: never guess which one it is
            ids = ", ".join(r.id for r, _ in named)
            raise SelectionError(
                f"The archive name {archive.name} is an asset of several releases ({ids}); "
                "zluda-runner cannot tell which one this file is.",
                hint=f"Name the release, e.g. {{cmd:fetch {named[0][0].id} --archive {archive}}}.",
            )
    choice = select_asset(manifest, os=os_name, hip=hip, cuda=cuda, release=version).require()
    return choice.release, choice.asset


def fetch(
    manifest_path: Path | None,
    cache_dir: Path,
    *,
    version: str | None = None,
    os_name: str | None = None,
    hip: str | None = None,
    cuda: int | None = None,
    archive: Path | None = None,
    trust_on_first_use: bool = False,
    reinstall: bool = False,
    progress: bool | None = None,
) -> Fetched:
    """Pick, install or check, and locate a release (see the module doc)."""
    check_cache_folder(cache_dir)  # before the manifest update the cache may hold is looked for
    manifest = load_current_manifest(manifest_path, cache_dir)  # the one every command uses
    archive = archive.expanduser() if archive is not None else None
    release, asset = pick(manifest, version, os_name, hip, cuda, archive)
    outcome = fetch_release(release, asset, cache_dir, trust_on_first_use=trust_on_first_use,
                            archive=archive, reinstall=reinstall, progress=progress)
    return Fetched.of(outcome, resolve_release_root(outcome.unpacked, asset))


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
