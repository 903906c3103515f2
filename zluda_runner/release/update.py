"""``zluda-run manifest update``: fetch a newer release manifest without a new package.

The manifest is fetched over TLS (certificates verified; plain ``http://`` only to the
loopback address, for tests, or when the caller allows it explicitly; checked at every redirect
hop, on the URL as the HTTP client parses it), read within bounds (size, nesting depth, and a
total deadline a watchdog enforces however slowly headers or body trickle), validated like any
manifest, and accepted only when its ``manifest_version`` is newer than the one in use. It then
atomically replaces the cached copy under :attr:`CachePaths.manifest_dir`;
a refused manifest replaces nothing.
``--manifest`` still wins over the cached copy (:func:`load_current_manifest`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from zluda_runner.core.errors import CacheError, FetchError, ManifestError, ZludaRunnerError
from zluda_runner.core.fsutil import atomic_write_bytes, atomic_write_json
from zluda_runner.core.redact import MASK, redact_url
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.manifest import (
    MAX_MANIFEST_BYTES,
    cached_manifest_path,
    decode_manifest_bytes,
    load_current_manifest,
    read_bounded,
)
from zluda_runner.release.model import Manifest
from zluda_runner.release.validation import parse_manifest

URL_ENV = "ZLUDA_RUNNER_MANIFEST_URL"
STALE_AFTER_DAYS = 90
DEFAULT_TIMEOUT = (10.0, 30.0)  # connect, read
TOTAL_SECONDS = 120.0
ORIGIN_FILE = "origin.json"
_LOOPBACK = ("127.0.0.1", "::1", "localhost")
BUDGET_ENV = "ZLUDA_RUNNER_MANIFEST_BUDGET_S"  # the total deadline, seconds (default TOTAL_SECONDS)


@dataclass
class UpdateResult(JsonMixin):
    """What ``manifest update`` did: ``replaced`` false when the fetched one was not newer."""

    url: str
    path: str
    replaced: bool
    manifest_version: int
    previous_version: int
    updated: str | None
    message: str


def origin_path(cache_dir: Path) -> Path:
    return cached_manifest_path(cache_dir).parent / ORIGIN_FILE


def cached_origin(cache_dir: Path) -> dict[str, str] | None:
    """``{"url": ..., "fetched": ...}`` of the cached manifest, when ``manifest update`` left one."""
    try:
        data = json.loads(read_bounded(origin_path(cache_dir), 64 * 1024, "manifest origin"))
    except (ManifestError, ValueError):
        return None
    if isinstance(data, dict) and all(isinstance(data.get(k), str) for k in ("url", "fetched")):
        return {"url": redact_url(data["url"]), "fetched": data["fetched"]}  # one stored before redaction
    return None


def _check_url(url: str, allow_http: bool, what: str = "manifest",
               error: type[ZludaRunnerError] = ManifestError) -> None:
    """``url`` (the first or any redirect hop) as the HTTP client connects to it: https, or plain http
    to the loopback address (or anywhere with ``allow_http``)."""
    from zluda_runner.release.httpguard import client_url  # imports requests: only when updating

    parts = client_url(url, f"{what} URL")
    scheme, host = (parts.scheme or "").lower(), (parts.host or "").strip("[]").lower()
    if scheme == "https" and host:
        return
    if scheme == "http" and host and (host in _LOOPBACK or allow_http):
        return
    raise error(
        f"refusing to fetch a {what} from {redact_url(url)!r} (the HTTP client would connect to "
        f"{scheme}://{host or '?'}): only https:// URLs are used",
        hint="give an https:// URL (every redirect must stay on https); plain http:// only to 127.0.0.1, "
        "or with {opt:allow_http} if you trust the network",
    )


def _budget(total: float | None) -> float:
    if total is not None:
        return total
    text = os.environ.get(BUDGET_ENV, "").strip()
    try:
        value = float(text) if text else TOTAL_SECONDS
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        raise ManifestError(f"{BUDGET_ENV}={text!r} is not a number of seconds (above 0)",
                            hint="set it to e.g. 120, or unset it")
    return value


def fetch_document(url: str, *, what: str, limit: int, error: type[ZludaRunnerError],
                   allow_http: bool = False, timeout: tuple[float, float] = DEFAULT_TIMEOUT,
                   total: float = TOTAL_SECONDS) -> bytes:
    """A small document (a manifest, a results bundle) fetched from ``url`` over https (or plain http to
    the loopback address, or anywhere with ``allow_http``), every redirect hop checked, at most ``limit``
    bytes, within ``total`` seconds however slowly it trickles; ``error`` (or FetchError) says what failed,
    nothing was kept."""
    _check_url(url, allow_http, what, error)
    return _download(url, limit, allow_http, timeout, total, what, error)


def _download(url: str, limit: int, allow_http: bool, timeout: tuple[float, float], total: float,
              what: str = "manifest", error: type[ZludaRunnerError] = ManifestError) -> bytes:
    import requests  # here: listing the manifest must not pay for importing requests

    from zluda_runner.release.httpguard import Watchdog, guarded_session, reason

    shown = redact_url(url)
    late = FetchError(f"fetching the {what} {shown} took more than {total:g} s (the whole budget)",
                      hint=f"try again, or raise {BUDGET_ENV}; nothing was replaced")
    deadline = time.monotonic() + total
    dog = Watchdog()
    dog.arm(total)  # a server trickling headers or body (each byte resets the read time-out) is cut here
    session = guarded_session(lambda hop: _check_url(hop, allow_http, what, error), dog)
    try:
        with session, session.get(url, stream=True, timeout=timeout, verify=True) as resp:
            if resp.status_code != 200:
                raise FetchError(
                    f"could not fetch the {what} {shown}: HTTP {resp.status_code}",
                    hint="check the URL; nothing was replaced",
                )
            declared = resp.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > limit:
                raise error(
                    f"the {what} at {shown} is {declared} bytes, more than the {limit} a {what} may have",
                    hint="is the URL right? nothing was replaced",
                )
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_content(64 * 1024):
                size += len(chunk)
                if size > limit:
                    raise error(
                        f"the {what} at {shown} is more than {limit} bytes",
                        hint="is the URL right? nothing was replaced",
                    )
                if dog.fired or time.monotonic() > deadline:
                    raise late
                chunks.append(chunk)
            if dog.fired:  # a body without a length ends where the watchdog cut it: never use that
                raise late
            return b"".join(chunks)
    except requests.exceptions.RequestException as exc:
        if dog.fired:
            raise late from None
        if isinstance(exc, requests.exceptions.SSLError):
            raise FetchError(f"TLS verification failed for {shown}: {reason(exc)}",
                             hint="the certificate is not trusted; nothing was replaced") from None
        raise FetchError(f"could not fetch the {what} {shown}: {reason(exc)}",
                         hint="check the network and the URL; nothing was replaced") from None
    finally:
        dog.disarm()


def update_manifest(
    cache_dir: Path,
    url: str | None = None,
    *,
    allow_http: bool = False,
    limit: int = MAX_MANIFEST_BYTES,
    timeout: tuple[float, float] = DEFAULT_TIMEOUT,
    total_seconds: float | None = None,
) -> UpdateResult:
    """Fetch ``url`` (default ``$ZLUDA_RUNNER_MANIFEST_URL``), validate it, and replace the cached
    manifest when it is newer than the one in use. Raises ManifestError/FetchError, replacing
    nothing, for a bad URL, a download fault, an oversized, malformed or older manifest.
    ``total_seconds`` (default ``$ZLUDA_RUNNER_MANIFEST_BUDGET_S``, else 120) bounds the whole fetch."""
    url = url or os.environ.get(URL_ENV) or published_url(cache_dir)
    if not url:
        raise ManifestError(
            "no manifest URL given, and the manifest in use names no published URL (its update_url)",
            hint=f"pass the URL of a published zluda-releases.json, or set {URL_ENV}",
        )
    if MASK in url and url == (cached_origin(cache_dir) or {}).get("url"):
        raise ManifestError(
            f"the cached manifest came from {url}, whose credentials are not kept",
            hint=f"give the URL (with its token) again, or set {URL_ENV}; nothing was replaced",
        )
    _check_url(url, allow_http)
    shown = redact_url(url)
    data = _download(url, limit, allow_http, timeout, _budget(total_seconds))
    fetched: Manifest = parse_manifest(decode_manifest_bytes(data, url, limit), source=url)
    current = load_current_manifest(None, cache_dir)
    new_v, old_v = int(fetched.manifest_version), int(current.manifest_version)
    target = cached_manifest_path(cache_dir)
    if new_v < old_v:
        raise ManifestError(
            f"the manifest at {url} is older (manifest_version {new_v}) than the one in use ({old_v}, "
            f"{current.source})",
            hint="nothing was replaced; an older manifest is never installed over a newer one"
            + (f". If the one in use is wrong (a bad mirror's version), delete {current.source} to go back "
               "to the packaged manifest, then update again" if current.source == str(target) else ""),
        )
    if new_v == old_v:
        return UpdateResult(shown, str(target), False, new_v, old_v, fetched.updated,
                            f"the manifest in use is already version {old_v}; nothing replaced")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:  # a read-only or full cache: a CacheError, never a traceback; the write is atomic
        atomic_write_bytes(target, data, durable=True)
    except OSError as exc:
        raise _unwritable(target, exc, "nothing was replaced") from exc
    try:
        atomic_write_json(origin_path(cache_dir), {"url": shown, "fetched": stamp,  # never a credential
                                                   "manifest_version": new_v, "updated": fetched.updated})
    except OSError as exc:
        raise _unwritable(origin_path(cache_dir), exc, f"manifest version {new_v} is in use, but where it "
                          "came from was not recorded (the next update without a URL needs one)") from exc
    return UpdateResult(shown, str(target), True, new_v, old_v, fetched.updated,
                        f"manifest version {new_v} (updated {fetched.updated}) replaces version {old_v}")


def _unwritable(path: Path, exc: OSError, outcome: str) -> CacheError:
    return CacheError(
        f"could not write {path}: {exc.strerror or exc}; {outcome}",
        hint="check the permissions and free space of the cache folder, or choose another cache with "
        "{opt:cache_dir} or ZLUDA_RUNNER_CACHE",
    )


def manifest_age_days(manifest: Manifest, today: dt.date | None = None) -> int | None:
    """Days since the manifest's ``updated`` date (a month counts from its first day), or None."""
    text = manifest.updated or ""
    parts = [int(p) for p in text.split("-") if p.isdigit()]
    if not parts:
        return None
    year, month, day = (*parts, 1, 1)[:3]
    try:
        stamp = dt.date(year, month, day)
    except ValueError:
        return None
    if today is None:
        from zluda_runner.core import observe

        today = dt.date(*observe.today())  # (the date is an input of every view that says the age)
    return (today - stamp).days


def staleness_warning(manifest: Manifest, today: dt.date | None = None) -> str | None:
    age = manifest_age_days(manifest, today)
    if age is None or age <= STALE_AFTER_DAYS:
        return None
    how = "{cmd:manifest update}" if manifest.update_url else "{cmd:manifest update URL}"
    return (f"the manifest is {age} days old (updated {manifest.updated}): newer ZLUDA builds may exist; "
            f"run {how}")


def published_url(cache_dir: Path | None) -> str | None:
    """The URL its publisher publishes newer manifests at: the ``update_url`` of the manifest in use
    (the packaged one names the project's), None when it names none or cannot be read."""
    try:
        return load_current_manifest(None, cache_dir).update_url
    except ManifestError:
        return None


@dataclass(frozen=True)
class KnownManifest:
    """A manifest this installation knows of: its version, date, and where it is (or was seen)."""

    manifest_version: int
    updated: str | None
    where: str


def newest_known(cache_dir: Path | None) -> KnownManifest | None:
    """The newest manifest this installation knows of: the packaged one, the copy ``manifest update``
    left in the cache, and the version the last update fetched (``origin.json``, which outlives a cached
    copy deleted or broken since). None when none can be read."""
    from zluda_runner.release.manifest import cached_manifest_path, load_manifest

    known: list[KnownManifest] = []
    candidates = [None] + ([cached_manifest_path(cache_dir)] if cache_dir is not None else [])
    for path in candidates:
        try:
            m = load_manifest(path)
        except ManifestError:
            continue
        known.append(KnownManifest(int(m.manifest_version), m.updated, m.source or "?"))
    seen = _origin_version(cache_dir) if cache_dir is not None else None
    if seen is not None:
        known.append(seen)
    return max(known, key=lambda k: k.manifest_version, default=None)


def _origin_version(cache_dir: Path) -> KnownManifest | None:
    try:
        data = json.loads(read_bounded(origin_path(cache_dir), 64 * 1024, "manifest origin"))
    except (ManifestError, ValueError):
        return None
    version = data.get("manifest_version") if isinstance(data, dict) else None
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= 2**31 - 1:
        return None
    updated = data.get("updated") if isinstance(data.get("updated"), str) else None
    where = f"{redact_url(str(data.get('url', '?')))} (fetched {data.get('fetched', '?')})"
    return KnownManifest(version, updated, where)


def older_than_known(manifest: Manifest, cache_dir: Path | None) -> str | None:
    """A warning when the manifest in use is older than the newest one this installation knows of
    (:func:`newest_known`): a ``--manifest`` / ``ZLUDA_RUNNER_MANIFEST`` file left behind, typically."""
    newest = newest_known(cache_dir)
    if newest is None or newest.manifest_version <= int(manifest.manifest_version):
        return None
    return (f"the manifest in use (version {manifest.manifest_version}, updated {manifest.updated}, from "
            f"{manifest.source}) is older than version {newest.manifest_version} (updated {newest.updated}) "
            f"at {newest.where}: drop {{opt:manifest}} / ZLUDA_RUNNER_MANIFEST to use the newer one")
