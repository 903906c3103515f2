"""The release cache: verified archives, unpacked releases, locks and the trust file.

Layout (``<cache>`` is ``--cache-dir`` / ``$ZLUDA_RUNNER_CACHE`` / the user cache)::

    <cache>/
      downloads/<release>/<asset-name>          verified archives (zip / tar.gz)
      releases/<release>/<asset-stem>/          the unpacked release (what ensure_release returns)
      releases/<release>/<asset-stem>.complete.json
                                                marker, written last: sha256, url, time, ...;
                                                a folder without it is not trusted
      downloads/<release>/<asset-name>.part     an interrupted download, resumed next time
                                                (+ ``.part.json``: the URL and hash it belongs to)
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

Files a running program holds (Windows: a DLL of the release loaded by an app) are found
before anything changes: ``cache clean`` and ``fetch --reinstall`` then refuse, naming them
(:mod:`zluda_runner.core.replace`). A folder is removed by renaming it into ``tmp/`` first,
so a release is whole or gone, never half there; what a program grabbed in between is left
in ``tmp/`` and swept with the other leftovers.

The marker records every file of the unpacked tree (size, SHA-256, link
target, identity). Every use checks the tree cheaply against it (a ``stat``
per file; a file whose mtime or inode moved is hashed), ``fetch`` hashes every
file (:mod:`~zluda_runner.release.integrity`); a changed tree is a CacheError
saying what changed and how to reinstall (``fetch --reinstall``). A marker
without that record (an older zluda-runner) makes the release be unpacked
again from its verified archive.

A cache folder that cannot be one (a file, under a file, a link to nothing, or its ``downloads/``,
``releases/``, ``tmp/`` or ``locks/`` a file) is one CacheError naming that path, from every call here
before anything is read or written (:func:`check_cache_folder`).

Modules: :mod:`~zluda_runner.release.store` (layout, records, trust file,
locks), :mod:`~zluda_runner.release.install` (the writing),
:mod:`~zluda_runner.release.integrity` (the checks); this one is the API.

Nothing is unpacked without a SHA-256 to check it against: the manifest's, else
the one ``trust.json`` recorded. With neither, the fetch is refused unless the
user passes ``trust_on_first_use`` (``--trust-on-first-use``): the computed
hash is then recorded (keyed by the asset's upstream URL) and every later
fetch of that asset must match it. Trusting on first use over plain http is
refused.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import filelock

from zluda_runner.core.errors import CacheError, ChecksumError, FetchError
from zluda_runner.core.replace import (
    InUseCheck,
    files_in_use,
    in_use_error,
    refuse_if_in_use,
    remove_tree_whole,
)
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.hashio import hash_file, normalize_sha256
from zluda_runner.release.install import expected_hash, install, partial_download
from zluda_runner.release.integrity import IntegrityReport, full_check, quick_check, tampered_error
from zluda_runner.release.store import (
    MARKER_SUFFIX,
    PARTIAL_SUFFIX,
    CacheEntry,
    CacheLayout,
    CleanResult,
    Marker,
    ReleaseLike,
    TrustStore,
    drop_empty_areas,
    lock_fault,
    owned_entries,
    owned_keys,
    read_marker,
    real_dir,
    release_lock,
    safe_component,
    sweep_stale,
    tree_size,
)

if TYPE_CHECKING:  # the HTTP stack (requests) is imported by a download only
    from zluda_runner.release.fetch import AssetLike, RetryPolicy

__all__ = [
    "CacheEntry", "CacheLayout", "CleanResult", "FetchOutcome", "Interrupted", "Marker", "PartialDownload",
    "TrustStore", "cache_contents", "cached_release_dir", "check_cache_folder", "clean_cache",
    "ensure_release", "fetch_release", "list_cache", "list_partial_downloads", "safe_component",
    "verify_cache",
]

Verify = Literal["quick", "full"]


@dataclass
class FetchOutcome(JsonMixin):
    """What ``fetch`` did: ``action`` is downloaded | installed-from-archive | cached."""

    release_id: str
    asset: str
    unpacked: Path
    sha256: str
    hash_source: str
    url: str
    action: str
    verified: str  # "full": every file was hashed against the install record
    notes: list[str] = field(default_factory=list)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a fetch; ``note`` says what was kept for the next fetch to resume."""

    def __init__(self, note: str) -> None:
        super().__init__(note)
        self.note = note


def check_cache_folder(cache_dir: Path) -> None:
    """Raise CacheError when ``cache_dir`` cannot be a cache folder: it, or a folder above it, is a file
    (or a symbolic link to nothing). One that does not exist yet is fine. Every call of this module
    checks it first, so each command touching the cache says so, not what it failed on next."""
    CacheLayout(Path(cache_dir)).require_folder()


def cached_release_dir(
    cache_dir: Path, release: ReleaseLike, asset: AssetLike, *, verify: Verify = "quick"
) -> Path | None:
    """The unpacked folder of ``asset`` if the cache holds a complete, matching copy, else None.

    Raises CacheError when that copy was changed after it was installed (see the module doc).
    """
    layout = CacheLayout(Path(cache_dir))
    layout.require_folder()
    marker = read_marker(layout.marker_path(release.id, asset.name))
    folder = layout.release_dir(release.id, asset.name)
    if marker is None or not folder.is_dir() or marker.files is None:
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
    problems = (full_check if verify == "full" else quick_check)(folder, marker.files)
    if problems:
        raise tampered_error(release.id, folder, problems)
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
    verify: Verify = "quick",
    reinstall: bool = False,
    check: InUseCheck | None = None,
) -> Path:
    """Return the unpacked folder of ``asset``, downloading and unpacking only if needed.

    ``archive`` installs a file the user downloaded by hand instead of
    downloading (verified like a download). ``progress=None`` shows a bar when
    stderr is a terminal. ``verify`` is how a cached copy is checked;
    ``reinstall`` replaces it whatever its state. Raises FetchError /
    ChecksumError / ArchiveError / UnsafeArchiveError / CacheError, and
    FileInUseError when the copy to replace is held by a running program (checked
    before any download); on any of them the cache is left as it was (an
    interrupted download is kept to resume).
    """
    layout = CacheLayout(Path(cache_dir))
    layout.require_folder(writing=True)
    if not reinstall:
        found = cached_release_dir(layout.root, release, asset, verify=verify)
        if found is not None:
            return found
    show = sys.stderr.isatty() if progress is None else progress
    with release_lock(layout, release.id, show):
        if not reinstall:
            found = cached_release_dir(layout.root, release, asset, verify=verify)  # another process?
            if found is not None:
                return found
        if reinstall:  # refuse now, not after a download
            refuse_if_in_use([layout.release_dir(release.id, asset.name)],
                             f"reinstall release {release.id} in the cache", check)
        with _cache_writes(layout, f"install release {release.id}", "the cache is as it was"):
            sweep_stale(layout, release.id)
            return install(layout, release, asset, trust_on_first_use, archive, show, retry, check)


@contextlib.contextmanager
def _cache_writes(layout: CacheLayout, doing: str, outcome: str) -> Iterator[None]:
    """An OSError of the cache's own files (a read-only or full cache, ``tmp`` not a folder ...) is a
    CacheError naming the path, never a traceback."""
    try:
        yield
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise CacheError(
            f"Could not {doing} in the cache {layout.root}: {exc.strerror or exc}{where}; {outcome}.",
            hint="Check the permissions and free space of the cache folder, or choose another cache with "
            "{opt:cache_dir} or ZLUDA_RUNNER_CACHE.",
        ) from exc


def fetch_release(
    release: ReleaseLike,
    asset: AssetLike,
    cache_dir: Path,
    *,
    trust_on_first_use: bool = False,
    archive: Path | None = None,
    reinstall: bool = False,
    progress: bool | None = None,
    retry: RetryPolicy | None = None,
    check: InUseCheck | None = None,
) -> FetchOutcome:
    """``zluda-run fetch``: install (or find) the release, every file checked; say what was done.

    A cached copy is hashed in full. ``archive`` given while the release is cached
    is compared with what was installed: the same file is reported as such, another
    one is an error unless ``reinstall`` (then it replaces the cached copy).
    Ctrl-C raises :class:`Interrupted`, whose note names the partial download kept.
    """
    layout = CacheLayout(Path(cache_dir))
    layout.require_folder(writing=True)
    notes: list[str] = []
    action = "installed-from-archive" if archive is not None else "downloaded"
    cached = None if reinstall else cached_release_dir(layout.root, release, asset, verify="full")
    if cached is not None:
        action = "cached"
        if archive is not None:
            notes.append(_compare_archive(layout, release, asset, archive))
    try:
        folder = cached or ensure_release(
            release, asset, layout.root, trust_on_first_use=trust_on_first_use, archive=archive,
            progress=progress, retry=retry, verify="full", reinstall=reinstall, check=check,
        )
    except KeyboardInterrupt as exc:
        kept = partial_download(layout, release.id, asset.name)
        note = (f"interrupted; {kept[1]} bytes of {asset.name} are kept in {kept[0]} and the next "
                f"`zluda-run fetch {release.id}` resumes them" if kept else "interrupted; nothing was cached")
        raise Interrupted(note) from exc
    marker = read_marker(layout.marker_path(release.id, asset.name))
    if marker is not None and marker.hash_source == "trust-on-first-use" and action != "cached":
        notes.append(f"the manifest publishes no SHA-256 for {asset.name}: the hash seen now, "
                     f"{marker.sha256}, was trusted and recorded in {layout.trust_file}; later fetches "
                     "must match it")
    return FetchOutcome(
        release_id=release.id, asset=asset.name, unpacked=folder,
        sha256=marker.sha256 if marker else "", hash_source=marker.hash_source if marker else "",
        url=asset.url, action=action, verified="full", notes=notes,
    )


def _compare_archive(layout: CacheLayout, release: ReleaseLike, asset: AssetLike, archive: Path) -> str:
    marker = read_marker(layout.marker_path(release.id, asset.name))
    if not archive.is_file():
        raise FetchError(f"The archive {archive} given with {{opt:archive}} does not exist or is not a file.",
                         hint=f"Pass the path of the downloaded {asset.name}.")
    sha, _size = hash_file(archive)
    installed = marker.sha256 if marker else "?"
    if sha == installed:
        return (f"{release.id} is already installed from an identical archive (sha256 {sha}); "
                f"{archive} was not needed")
    expected = expected_hash(layout, release, asset, True, archive).sha256
    verdict = ("it matches the expected hash, so the cached copy came from another file" if sha == expected
               else "it does not match the expected hash either")
    raise ChecksumError(
        f"{release.id} is already installed (sha256 {installed}), and {archive} differs (sha256 {sha}): "
        f"{verdict}. Nothing was changed.",
        hint=f"To replace the installed copy with this file, run {{cmd:fetch {release.id} --archive "
        f"{archive} --reinstall}} (it is verified like a download).",
    )


def verify_cache(cache_dir: Path) -> list[IntegrityReport]:
    """Hash every file of every cached release against its install record (for the doctor)."""
    layout = CacheLayout(Path(cache_dir))
    layout.require_folder()
    reports: list[IntegrityReport] = []
    if not layout.releases.is_dir():
        return reports
    for marker_path in sorted(layout.releases.glob(f"*/*{MARKER_SUFFIX}")):
        marker = read_marker(marker_path)
        folder = marker_path.with_name(marker_path.name[: -len(MARKER_SUFFIX)])
        if marker is None:
            continue
        report = IntegrityReport(marker.release_id, folder, "full")
        if marker.files is None:
            report.problems.append("installed by an older zluda-runner without a record of its files: "
                                   f"`zluda-run fetch {marker.release_id} --reinstall` records them")
        else:
            report.problems.extend(full_check(folder, marker.files))
        reports.append(report)
    return reports


def list_cache(cache_dir: Path) -> list[CacheEntry]:
    """Every complete release in the cache."""
    layout = CacheLayout(Path(cache_dir))
    layout.require_folder()
    entries: list[CacheEntry] = []
    if not layout.releases.is_dir():
        return entries
    for marker_path in sorted(layout.releases.glob(f"*/*{MARKER_SUFFIX}")):
        marker = read_marker(marker_path)
        folder = marker_path.with_name(marker_path.name[: -len(MARKER_SUFFIX)])
        if marker is None or not folder.is_dir():
            continue
        archive = layout.archive_path(marker.release_id, marker.asset)
        size = tree_size(folder) + (archive.stat().st_size if archive.is_file() else 0)
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


@dataclass(frozen=True)
class PartialDownload(JsonMixin):
    """An interrupted download the next ``fetch`` of its release resumes (``downloads/<id>/<asset>.part``)."""

    release_id: str  # the folder name under downloads/ (the release id, made file-name safe)
    asset: str
    path: Path
    bytes_so_far: int
    total: int | None  # the asset's size when the manifest gives it
    url: str


def list_partial_downloads(cache_dir: Path) -> list[PartialDownload]:
    """Every partial download zluda-runner recorded (a ``.part`` with its ``.part.json`` note)."""
    layout = CacheLayout(Path(cache_dir))
    layout.require_folder()
    found: list[PartialDownload] = []
    if not real_dir(layout.downloads):
        return found
    for note_path in sorted(layout.downloads.glob(f"*/*{PARTIAL_SUFFIX}.json")):
        part = note_path.with_name(note_path.name[: -len(".json")])
        if not real_dir(note_path.parent) or not part.is_file() or part.is_symlink():
            continue
        try:
            note = json.loads(note_path.read_text(encoding="utf-8"))
            size = part.stat().st_size
        except (OSError, ValueError):
            continue
        note = note if isinstance(note, dict) else {}
        total = note.get("size")
        total = total if isinstance(total, int) and not isinstance(total, bool) else None
        found.append(PartialDownload(
            release_id=note_path.parent.name, asset=part.name[: -len(PARTIAL_SUFFIX)], path=part,
            bytes_so_far=size, total=total,
            url=str(note.get("url") or ""),
        ))
    return found


def cache_contents(cache_dir: Path) -> tuple[list[CacheEntry], list[PartialDownload]]:
    """What ``cache list`` shows: the complete releases, and the partial downloads a fetch resumes.

    Raises CacheError when the cache folder is a file (or under one): see :func:`check_cache_folder`."""
    check_cache_folder(cache_dir)
    return list_cache(cache_dir), list_partial_downloads(cache_dir)


def named_release(version: object) -> str:
    """``version`` as the name of one release (an id, version or tag): text, not blank. An empty one (an
    unset shell variable: ``cache clean "$V"``) names nothing, never every release: only an omitted
    VERSION means all of them."""
    if isinstance(version, str) and version.strip():
        return version
    raise CacheError(f"{version!r} names no release: VERSION must be a release's id, version or tag",
                     hint="leave VERSION out to mean every release; {cmd:releases} lists them")


def clean_cache(
    cache_dir: Path, release_id: str | None = None, *, check: InUseCheck | None = None
) -> CleanResult:
    """Remove one release (downloads, unpacked folders, leftovers) or all of them.

    Only what zluda-runner recorded as its own is removed: a completion marker's unpacked folder and
    archive, a partial download with its note, a work folder named as only it names them. Another
    file of ``downloads/``, ``releases/`` or ``tmp/`` (``--cache-dir`` may be a folder that holds
    other things) is never touched, and a symlinked area is not entered. The trust file, locks
    and other areas' folders (e.g. ``native/``) are kept.
    Each release is removed under its lock, so a fetch running in another process
    never loses its work folder: cleaning one release waits for that fetch;
    cleaning all of them skips the releases being fetched and lists them in ``busy``.

    All or nothing: when any file to remove is held by a running program (Windows: an app has a
    DLL of the release loaded), nothing is removed and a FileInUseError names the files and, where
    Windows can tell, the programs. Each folder is renamed into ``tmp/`` before it is deleted, so a
    release is whole in the cache or gone from it (``list_cache`` never shows half of one); what a
    program grabbed in between is left there, and the next clean or fetch of that release deletes it.
    """
    layout = CacheLayout(Path(cache_dir))
    layout.require_folder(writing=True)
    removed: list[Path] = []
    freed = 0
    if release_id is not None:
        key = safe_component(named_release(release_id), "release id")
        with release_lock(layout, release_id, False), _cache_writes(
                layout, f"remove release {release_id}", _CLEAN_OUTCOME):
            targets = _release_paths(layout, key)
            refuse_if_in_use(targets, f"remove release {release_id} from the cache", check)
            for target in targets:
                freed += _remove_whole(layout, key, target, removed, check)
            drop_empty_areas(layout, key)
        return CleanResult(removed, freed)
    keys = owned_keys(layout)
    blocked = files_in_use([p for key in sorted(keys) for p in _release_paths(layout, key)], check)
    if blocked:
        raise in_use_error(blocked, "clean the cache", outcome="Nothing was removed; {cmd:cache clean "
                           "VERSION} removes the other releases one by one.")
    busy: list[str] = []
    if keys:
        layout.locks.mkdir(parents=True, exist_ok=True)
    for key in sorted(keys):
        lock = filelock.FileLock(layout.lock_path(key))
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            busy.append(key)
            continue
        except OSError as exc:  # a symlink there (filelock opens O_NOFOLLOW): say so, follow nothing
            raise lock_fault(layout.lock_path(key), exc) from None
        try:
            with _cache_writes(layout, f"remove release {key}", _CLEAN_OUTCOME):
                for target in _release_paths(layout, key):
                    freed += _remove_whole(layout, key, target, removed, check)
                drop_empty_areas(layout, key)
        finally:
            lock.release()
    freed += _forget_memos(layout.root, removed)
    return CleanResult(removed, freed, busy)


def _forget_memos(root: Path, removed: list[Path]) -> int:
    """The memos of launches and printing commands (``launches/``, ``commands/``: each ``*.memo`` file
    there, nothing else), removed with every release: they would only miss."""
    from zluda_runner.core.places import COMMAND_MEMOS, LAUNCHES

    freed = 0
    for folder in (root / LAUNCHES, root / COMMAND_MEMOS):
        if folder.is_symlink() or not folder.is_dir():
            continue
        for memo in sorted(folder.glob("*.memo")):
            with contextlib.suppress(OSError):
                if memo.is_file() and not memo.is_symlink():
                    size = memo.stat().st_size
                    memo.unlink()
                    freed += size
                    removed.append(memo)
    return freed


_CLEAN_OUTCOME = "what was removed before stays removed, and no release is left half there"


def _remove_whole(layout: CacheLayout, key: str, target: Path, removed: list[Path],
                  check: InUseCheck | None) -> int:
    """Remove ``target`` whole: renamed to ``tmp/<key>@removing-*`` (which the release's sweep deletes
    if anything is left), then deleted."""
    if not (target.exists() or target.is_symlink()):
        return 0
    layout.tmp.mkdir(parents=True, exist_ok=True)
    aside = Path(tempfile.mkdtemp(prefix=f"{key}@removing-", dir=layout.tmp)) / "x"
    try:
        freed = remove_tree_whole(target, aside, f"remove release {key} from the cache",
                                  again=f"zluda-run cache clean {key}", check=check)
    finally:
        with contextlib.suppress(OSError):
            aside.parent.rmdir()  # empty unless something was left in it
    removed.append(target)
    return freed


def _release_paths(layout: CacheLayout, key: str) -> list[Path]:
    """What the cache holds for the release whose folder name is ``key`` and zluda-runner recorded as
    its own (nothing else of ``downloads/``, ``releases/``, ``tmp/``; no link followed out)."""
    return owned_entries(layout, key)
