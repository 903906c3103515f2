"""Install a release into the cache: verify the archive, unpack it, record what was installed.

The steps and guarantees are described in :mod:`zluda_runner.release.cache`;
this is the part that writes. A download goes to ``downloads/<release>/<asset>.part``
(with a ``.part.json`` note of the URL and expected hash), so an interrupted
fetch resumes with ``Range`` next time; it moves into the release's work folder
once verified. Trusting a hash on first use over plain http is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from zluda_runner.core.errors import ArchiveError, ChecksumError, FetchError, UnsafeArchiveError
from zluda_runner.core.paths import real_path
from zluda_runner.core.redact import redact_url
from zluda_runner.core.replace import InUseCheck, delete_all, move_aside, refuse_if_in_use
from zluda_runner.core.version import JSON_SCHEMA_VERSION
from zluda_runner.release.hashio import hash_file, normalize_sha256
from zluda_runner.release.integrity import inventory
from zluda_runner.release.names import UnusableArchiveError, shown
from zluda_runner.release.store import (
    CacheLayout,
    Marker,
    ReleaseLike,
    TrustStore,
    now,
    remove,
    safe_component,
    write_json,
)
from zluda_runner.release.unpack import archive_format, safe_extract

if TYPE_CHECKING:  # the HTTP stack (requests) is imported by a download only
    from zluda_runner.release.fetch import AssetLike, RetryPolicy


@dataclass
class _Expected:
    sha256: str | None
    source: str  # "manifest" | "trust-file" | "trust-on-first-use"


def expected_hash(
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
        hint="If you trust this source, run again with {opt:trust_on_first_use}: the hash seen now is "
        f"recorded in {layout.trust_file} and every later fetch of this asset must match it.",
    )


def by_hand(release: ReleaseLike, asset: AssetLike, expected: _Expected) -> str:
    """The command that installs a copy of ``asset`` downloaded by hand, as a hint offers it: with
    ``--trust-on-first-use`` where no hash is known for it (neither published nor recorded), without
    which that command would be refused in turn."""
    os_name = getattr(asset, "os", None)  # a manifest Asset has it; fetch's AssetLike need not
    words = f"fetch {release.id}{f' --os {os_name}' if os_name else ''} --archive FILE"
    return f"{{cmd:{words}{' --trust-on-first-use' if expected.sha256 is None else ''}}}"


def install(
    layout: CacheLayout,
    release: ReleaseLike,
    asset: AssetLike,
    tofu: bool,
    archive: Path | None,
    show: bool,
    retry: RetryPolicy | None,
    check: InUseCheck | None = None,
) -> Path:
    """Verify, unpack and put ``asset`` in the cache; what was there before is replaced whole.

    Before anything of the cache changes, the folder and archive to replace are checked not to be
    held by a running program (Windows: a DLL of the cached release loaded by an app); one that
    is refuses with a FileInUseError naming it, the cache as it was. The old folder is renamed
    aside (into the work folder) before the new one takes its name, so at any instant the entry is
    the old one, absent, or the new one."""
    expected = expected_hash(layout, release, asset, tofu, archive)
    fmt = asset.format if asset.format else archive_format(asset.name)
    final_archive = layout.archive_path(release.id, asset.name)
    final_dir = layout.release_dir(release.id, asset.name)
    marker_path = layout.marker_path(release.id, asset.name)
    layout.tmp.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{safe_component(release.id, 'release id')}@", dir=layout.tmp))
    swapping = False
    try:
        staged, fetched_from, sha, size = _stage_archive(
            layout, release, asset, archive, expected, work, show, retry
        )
        tree = work / "tree"
        try:
            safe_extract(staged, fmt, tree)
        except (UnsafeArchiveError, UnusableArchiveError) as exc:  # another download would be the same
            exc.message = f"{exc.raw_message} (archive from {shown(fetched_from)})"
            raise
        except ArchiveError as exc:
            raise _unreadable(exc, layout, asset, fmt, fetched_from, sha, expected,
                              by_hand(release, asset, expected)) from exc
        files = inventory(tree)  # identity survives the rename below (same inode, same mtime)
        final_archive.parent.mkdir(parents=True, exist_ok=True)
        final_dir.parent.mkdir(parents=True, exist_ok=True)
        doing = f"install release {release.id} into the cache"
        refuse_if_in_use([final_dir, *([final_archive] if staged != final_archive else [])], doing, check)
        move_aside(final_dir, work / "replaced", doing, check=check)  # the entry was there: now it is not
        swapping = True
        marker_path.unlink(missing_ok=True)
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
            fetched_from=redact_url(fetched_from),  # a mirror's user:password@ is never stored
            sha256=sha,
            hash_source=expected.source,
            size=size,
            fetched_at=now(),
            files=files,
        )
        write_json(marker_path, marker.to_dict())
        return final_dir
    except BaseException:
        if swapping:  # no half entry: no archive, no folder, no marker of this asset
            marker_path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                remove(final_dir, [])
            final_archive.unlink(missing_ok=True)
        raise
    finally:
        delete_all(work)  # what a running program still holds stays in tmp/, swept next time


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
    from zluda_runner.release.fetch import download, mirror_url  # the HTTP stack: a download only

    url = mirror_url(asset.url)
    if expected.sha256 is None and urlsplit(url).scheme.lower() == "http":
        raise FetchError(
            f"Refusing to trust {asset.name} on first use over plain http ({url}): anyone on the way could "
            "have replaced it, and its hash would then be recorded as the trusted one. Nothing was "
            "downloaded.",
            hint="Use an https:// mirror (ZLUDA_RUNNER_MIRROR) or none; or download the file over https "
            f"yourself and run {by_hand(release, asset, expected)}; or add its sha256 to the manifest.",
        )
    staged = work / safe_component(asset.name, "asset")
    partial = layout.partial_path(release.id, asset.name)
    _prepare_partial(partial, url, asset, expected)
    try:
        result = download(
            url,
            partial,
            expected_sha256=expected.sha256,
            expected_size=asset.size,
            label=asset.name,
            progress=show,
            retry=retry,
            upstream_url=asset.url,
            resume=True,
            by_hand=by_hand(release, asset, expected),
        )
    except ChecksumError as exc:
        if expected.source == "trust-file":
            exc.message = exc.raw_message + (
                f" The expected SHA-256 is the one recorded on first use in {layout.trust_file}."
            )
            exc.hint = (
                "The file changed since you first trusted it: do not use it unless you know why. If upstream "
                f"re-published it on purpose, remove its entry ({asset.url}) from {layout.trust_file} and "
                "fetch again with {opt:trust_on_first_use}."
            )
        raise
    finally:
        if partial.exists() and partial.stat().st_size == 0:
            partial.unlink()  # nothing arrived: nothing to resume
        if not partial.exists():  # kept only when it can be resumed
            _forget_partial(partial)
    os.replace(partial, staged)
    _forget_partial(partial)
    return staged, url, result.sha256, result.size


def _forget_partial(partial: Path) -> None:
    _partial_note(partial).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        partial.parent.rmdir()  # only if empty: a folder of nothing is not left behind


def _partial_note(partial: Path) -> Path:
    return partial.with_name(partial.name + ".json")


def _prepare_partial(partial: Path, url: str, asset: AssetLike, expected: _Expected) -> None:
    """Keep a partial download only if it is the start of this very file; note what it is."""
    note = {"url": redact_url(url), "upstream_url": asset.url, "sha256": expected.sha256, "size": asset.size}
    try:
        kept = json.loads(_partial_note(partial).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = None
    if kept != note:
        partial.unlink(missing_ok=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    write_json(_partial_note(partial), note)


def partial_download(layout: CacheLayout, release_id: str, asset_name: str) -> tuple[Path, int] | None:
    """The interrupted download of an asset waiting to be resumed: (path, bytes), or None."""
    partial = layout.partial_path(release_id, asset_name)
    try:
        return partial, partial.stat().st_size
    except OSError:
        return None


def _unreadable(
    exc: ArchiveError,
    layout: CacheLayout,
    asset: AssetLike,
    fmt: str,
    fetched_from: str,
    sha: str,
    expected: _Expected,
    hand: str,
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
            "with {opt:archive FILE}."
        )
    elif expected.source == "trust-file":
        hint = (
            f"The file matches the hash recorded on first use in {layout.trust_file}, so that record may be "
            "of a broken download: remove its entry, then fetch again with {opt:trust_on_first_use}; or "
            "install a working copy with {opt:archive FILE}."
        )
    else:
        hint = (
            f"No hash was known to check it, so it may have been cut short: fetch it again; nothing was "
            f"recorded in {layout.trust_file}. Or download {asset.url} by hand and install it with {hand}."
        )
    return ArchiveError(message, hint=hint)


def _copy_verified(source: Path, staged: Path, asset: AssetLike, expected: _Expected) -> tuple[str, int]:
    if not source.is_file():
        raise FetchError(
            f"The archive {source} given with {{opt:archive}} does not exist or is not a file.",
            hint=f"Pass the path of the downloaded {asset.name}.",
        )
    from zluda_runner.release.fetch import download

    result = download(Path(real_path(source)).as_uri(), staged, progress=False, upstream_url=asset.url)
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


