"""Download one release archive: stream, hash while streaming, resume, retry.

:func:`download` writes a URL's bytes to a file the caller names (the cache
gives it a temporary path inside the cache), computing SHA-256 on the fly:

- ``https://`` / ``http://`` through a :class:`requests.Session` (``stream=True``; certificates always
  verified; ``REQUESTS_CA_BUNDLE`` and proxies honoured); without a known hash (trust on first use)
  no redirect hop may go over plain http (checked at each hop, :mod:`~zluda_runner.release.httpguard`);
- a body cut short is resumed with ``Range: bytes=N-``: on ``206`` only the
  remainder is appended and the running hash simply continues; on ``200``
  (the server ignores ``Range``) the file is truncated and the download
  restarts cleanly from byte zero;
- transient faults (refused or reset connections, DNS hiccups, time-outs,
  5xx, 408, 429) are retried with exponential backoff, bounded by
  :class:`RetryPolicy` (counting consecutive failures that made no progress);
- ``file://`` URLs (a local mirror) are copied with the same hashing.

Every download is bounded (:class:`Limits`):

- by size: it stops as soon as the bytes exceed the expected size (the
  manifest's, else the server's Content-Length, else :data:`MAX_DOWNLOAD_BYTES`),
  and a server announcing another size than the manifest's, or (size unknown)
  more than :data:`MAX_DOWNLOAD_BYTES`, is refused before its body is read;
- by time: each ``window`` (60 s) must bring at least ``min_rate`` bytes a second on average, so a
  server trickling one byte every few seconds (which resets every read time-out) cannot keep a fetch
  alive (reads return as soon as the socket has data); a response's headers must all come within one
  window (a watchdog shuts the socket).

Any failure removes the output file and raises a FetchError (or ChecksumError) whose message names
the URL, what was expected and what happened, and whose hint says what to do. With ``resume=True``
the output file may hold the start of the same download (hashed and continued with ``Range``), and
an interruption (Ctrl-C) or a network failure keeps what arrived, for the next call to resume
(:class:`TransferError`); bytes that fail a size or hash check never stay.

Mirrors: ``ZLUDA_RUNNER_MIRROR`` replaces an upstream URL's scheme and host (:func:`mirror_url`).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit
from urllib.request import url2pathname

import requests
import urllib3.exceptions

from zluda_runner.core.envnames import CACHE_ENV, MIRROR_ENV
from zluda_runner.core.errors import CacheError, ChecksumError, FetchError
from zluda_runner.core.fsutil import open_regular
from zluda_runner.core.redact import redact_url
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.hashio import (
    HashingWriter,
    Progress,
    hash_file,
    hashing_writer,
    normalize_sha256,
    progress_bar,
)
from zluda_runner.release.httpbody import announced_total, body_reader, content_range_start
from zluda_runner.release.httpguard import HopCheck, Watchdog, client_url, guarded_session
from zluda_runner.release.httpguard import connection_problem as _connection_problem
from zluda_runner.release.httpguard import reason as _reason
from zluda_runner.release.httpguard import sentence as _sentence

__all__ = ["DownloadResult", "Limits", "RetryPolicy", "TransferError", "download", "hash_file", "mirror_url",
           "normalize_sha256"]

DEFAULT_TIMEOUT = (15.0, 60.0)  # (connect, read) seconds
#: the most a download may bring when neither the manifest nor the server gives its size
#: (a ZLUDA release archive is tens of MB)
MAX_DOWNLOAD_BYTES = 1 << 30


class TransferError(FetchError):
    """The transfer failed part way (network, stall): what arrived is sound and may be resumed. ``kept``:
    the bytes of the partial file kept to resume from, where the message says (0: none kept)."""

    def __init__(self, message: str, hint: str | None = None, *, kept: int | None = None) -> None:
        super().__init__(message, hint)
        self.kept = kept


@dataclass(frozen=True)
class Limits:
    """What one download may cost besides retries: bytes when the size is unknown, and pace.

    Each ``window`` seconds must bring ``min_rate * window`` bytes (4 KiB/s over a minute by
    default: a slow link passes, a trickle of a byte every few seconds does not). ``clock``
    is injectable for tests.
    """

    max_bytes: int = MAX_DOWNLOAD_BYTES
    min_rate: float = 4096.0
    window: float = 60.0
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)


class AssetLike(Protocol):
    """What fetching needs to know about a manifest asset."""

    name: str
    url: str
    sha256: str | None  # None: not known (see trust-on-first-use in cache.py)
    format: str  # "zip" | "tar.gz"
    size: int | None


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff; ``sleep`` is injectable for tests."""

    attempts: int = 4  # consecutive failures (without progress) before giving up
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_requests: int = 30  # hard ceiling, progress or not
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def delay(self, failure_number: int) -> float:
        return min(self.max_delay, self.base_delay * (2.0 ** max(0, failure_number - 1)))


@dataclass
class DownloadResult(JsonMixin):
    url: str
    path: Path
    sha256: str
    size: int
    requests: int  # HTTP requests made (1 when nothing went wrong)
    restarts: int  # times the server ignored Range and we began again from zero


class _Retryable(Exception):
    """A transient fault: worth another request (resuming where we are)."""

    def __init__(self, what: str, restarted: int = 0) -> None:
        super().__init__(what)
        self.what = what
        self.restarted = restarted


class _Restart(_Retryable):
    """The server cannot continue where we are: start again from zero."""


def mirror_url(url: str, mirror: str | None = None) -> str:
    """Map an upstream URL onto a mirror base: the mirror replaces scheme and host.

    ``https://github.com/vosen/ZLUDA/releases/download/v5/x.tar.gz`` with mirror ``https://mirror.example/z``
    becomes ``https://mirror.example/z/vosen/ZLUDA/releases/download/v5/x.tar.gz``; with ``file:///srv/z``
    the file ``/srv/z/vosen/ZLUDA/releases/download/v5/x.tar.gz``. None: ``$ZLUDA_RUNNER_MIRROR``; "": none.
    """
    if mirror is None:
        mirror = os.environ.get(MIRROR_ENV, "")
    mirror = mirror.strip()
    if not mirror:
        return url
    try:
        scheme = urlsplit(mirror).scheme.lower()
    except ValueError:  # "http://[::1": the client's parser below says what is wrong
        scheme = "http"
    if scheme not in ("http", "https", "file"):
        raise FetchError(
            f"The mirror base {mirror!r} (from {MIRROR_ENV}) is not an http://, https:// or file:// "
            "URL.",
            hint=f"Set {MIRROR_ENV} to e.g. https://mirror.example/zluda or file:///srv/zluda, or unset it.",
        )
    if scheme != "file":
        client_url(mirror, f"mirror base (from {MIRROR_ENV})")
    parts = urlsplit(url)
    tail = parts.path.lstrip("/")
    if parts.query:
        tail += "?" + parts.query
    return f"{mirror.rstrip('/')}/{tail}"


def make_session(check: HopCheck | None = None, watchdog: Watchdog | None = None) -> requests.Session:
    """A session checking every hop with ``check`` and bounded by ``watchdog`` (httpguard)."""
    return guarded_session(check, watchdog)


def _no_plain_http_hop(ctx: _Context) -> HopCheck:
    """Trust on first use: no hop over plain http, where anyone on the way chooses the bytes."""

    def check(hop: str) -> None:
        if client_url(hop).scheme != "https":
            raise FetchError(
                f"Refusing to trust {ctx.label} on first use: {redact_url(ctx.url)} redirected to plain http "
                f"({redact_url(hop)}): anyone on the way could have replaced it, and its hash would then be "
                "recorded as the trusted one. Nothing was downloaded.",
                hint="Use an https:// mirror (ZLUDA_RUNNER_MIRROR) that does not redirect to http, or none; "
                "or add the asset's sha256 to the manifest.",
            )

    return check


def download(
    url: str,
    dest: Path,
    *,
    expected_sha256: str | None = None,
    expected_size: int | None = None,
    label: str | None = None,
    progress: bool | None = None,
    retry: RetryPolicy | None = None,
    session: requests.Session | None = None,
    timeout: tuple[float, float] = DEFAULT_TIMEOUT,
    upstream_url: str | None = None,
    limits: Limits | None = None,
    resume: bool = False,
    by_hand: str | None = None,
) -> DownloadResult:
    """Fetch ``url`` into ``dest`` (created or truncated), verifying SHA-256 when given.

    ``upstream_url`` is the manifest URL when ``url`` is a mirror's (it only
    shapes error messages). ``progress=None`` shows a bar when stderr is a
    terminal. On any failure ``dest`` is removed and a FetchError raised;
    with ``resume`` (see the module doc) ``dest`` may hold the start of this
    download, and an interruption or a :class:`TransferError` keeps it. ``by_hand``: the command that
    installs a copy downloaded by hand, which a failure's hint offers (default: ``--archive FILE``).
    """
    expected = normalize_sha256(expected_sha256) if expected_sha256 else None
    ctx = _Context(url, label or Path(urlsplit(url).path).name, expected, expected_size, upstream_url,
                   limits or Limits(), by_hand=by_hand)
    show = sys.stderr.isatty() if progress is None else progress
    try:
        if urlsplit(url).scheme.lower() == "file":
            result = _copy_local(ctx, dest, show)
        else:
            tofu = expected is None and client_url(url).scheme == "https"
            sess = session if session is not None else make_session(
                _no_plain_http_hop(ctx) if tofu else None, ctx.watchdog)
            try:
                result = _download_http(ctx, dest, sess, retry or RetryPolicy(), timeout, show, resume)
            finally:
                if session is None:
                    sess.close()
        _verify(ctx, result)
        return result
    except OSError as exc:  # our own file: requests' and the network's faults are FetchErrors by now
        _discard(dest)
        raise CacheError(
            f"Could not save {url} to {dest} (expected {ctx.expectation()}): {exc.strerror or _reason(exc)}; "
            "the partial file was removed.",
            hint=f"Check free space and permissions in {dest.parent}, or choose another cache with "
            f"{{opt:cache_dir}} / {CACHE_ENV}.",
        ) from exc
    except (KeyboardInterrupt, TransferError):
        if not resume:  # callers that do not resume never see a partial file
            _discard(dest)
        raise
    except BaseException:  # FetchError, ChecksumError ...: never leave a partial file behind
        _discard(dest)
        raise


def _discard(dest: Path) -> None:
    with contextlib.suppress(OSError):  # the fault being reported matters more than this one
        dest.unlink(missing_ok=True)


# --------------------------------------------------------------------------- internals


@dataclass
class _Context:
    url: str
    label: str
    sha256: str | None
    size: int | None
    upstream_url: str | None
    limits: Limits = field(default_factory=Limits)
    watchdog: Watchdog = field(default_factory=Watchdog)  # bounds the wait for each response's headers
    by_hand: str | None = None  # the command that installs a hand-downloaded copy (install.by_hand)

    def size_limit(self, announced_total: int | None) -> tuple[int, str]:
        """The most bytes this download may bring, and where that bound comes from."""
        if self.size is not None:
            return self.size, f"the manifest's size of {self.size} bytes"
        if announced_total is not None and announced_total <= self.limits.max_bytes:
            return announced_total, f"the {announced_total} bytes the server announced"
        # the server's own Content-Length never lifts the cap: a hostile one announces terabytes
        return self.limits.max_bytes, f"the {self.limits.max_bytes} bytes no release archive exceeds"

    def too_big(self, got: int, limit: int, why: str, announced: bool = False) -> ChecksumError:
        sent = (f"announces {got} bytes" if announced else f"sent more than {limit} bytes ({got} so far)")
        done = ("nothing more was downloaded and the partial file was removed" if announced
                else "the download was stopped and the partial file removed")
        return ChecksumError(
            f"{self.url} {sent} for {self.expectation()}, over {why}; {done}.",
            hint="The server or mirror serves something else (or endlessly): " + self.fallback_hint(),
        )

    def expectation(self) -> str:
        what = f"the archive {self.label}"
        if self.sha256:
            what += f" (sha256 {self.sha256})"
        return what

    def fallback_hint(self) -> str:
        parts = [f"download {self.upstream_url or self.url} by hand and install it with "
                 + (self.by_hand or "{opt:archive FILE}")]
        if self.upstream_url and self.upstream_url != self.url:
            parts.append(f"check the mirror set in {MIRROR_ENV} (it maps the upstream path under its base)")
        else:
            parts.append(f"point {MIRROR_ENV} at a mirror")
        return "; or ".join(parts) + "."


def _verify(ctx: _Context, result: DownloadResult) -> None:
    if ctx.size is not None and result.size != ctx.size:
        raise ChecksumError(
            f"{ctx.url} gave {result.size} bytes, but {ctx.expectation()} has {ctx.size} bytes; "
            "the file was discarded and nothing was cached.",
            hint="Retry later (a proxy or mirror may serve a truncated or different file); "
            + ctx.fallback_hint(),
        )
    if ctx.sha256 is not None and result.sha256 != ctx.sha256:
        raise ChecksumError(
            f"{ctx.url} gave a file with sha256 {result.sha256}, but {ctx.expectation()} was expected; "
            "the file was discarded and nothing was cached.",
            hint="Do not use this file. If upstream re-published the release, update the manifest; "
            "otherwise a proxy or mirror is serving something else: " + ctx.fallback_hint(),
        )


def _copy_local(ctx: _Context, dest: Path, show: bool) -> DownloadResult:
    source = Path(url2pathname(urlsplit(ctx.url).path))
    try:
        src = open_regular(source)  # a FIFO, /dev/zero: refused at once, never a hang
    except OSError as exc:
        raise FetchError(
            f"Could not read {ctx.url} (expected {ctx.expectation()} at {source}): "
            f"{exc.strerror or _reason(exc)}.",
            hint="A file:// mirror must hold the upstream path under its base "
            "(e.g. <base>/vosen/ZLUDA/releases/download/v5/<asset>); " + ctx.fallback_hint(),
        ) from exc
    limit, why = ctx.size_limit(None)
    with src, hashing_writer(dest) as writer, progress_bar(show, ctx.label, ctx.size) as tick:
        while True:
            buf = writer.buffer()
            n = src.readinto(buf)
            writer.commit(buf, n)
            if not n:
                break
            if writer.written > limit:  # a FIFO or /dev/zero as a mirror: stop at the bound
                raise ctx.too_big(writer.written, limit, why)
            tick(n)
        digest = writer.hexdigest()
        size = writer.written
    return DownloadResult(ctx.url, dest, digest, size, requests=0, restarts=0)


def _download_http(
    ctx: _Context,
    dest: Path,
    session: requests.Session,
    retry: RetryPolicy,
    timeout: tuple[float, float],
    show: bool,
    resume: bool = False,
) -> DownloadResult:
    requests_made = restarts = failures = 0
    pace = _Pace(ctx)
    with hashing_writer(dest, resume) as writer, progress_bar(show, ctx.label, ctx.size) as tick:
        if ctx.size is not None and writer.written > ctx.size:  # not the start of this file
            writer.reset()
        while True:
            before = writer.written
            requests_made += 1
            try:
                restarts += _one_request(ctx, session, writer, timeout, tick, pace)
                break
            except _Restart as exc:
                writer.reset()
                restarts += 1
                failures += 1
                last = exc.what
            except _Retryable as exc:
                restarts += exc.restarted
                failures = 1 if writer.written > before else failures + 1
                last = exc.what
            if failures >= retry.attempts or requests_made >= retry.max_requests:
                kept = " and kept the partial file to resume" if resume else " and discarded the partial file"
                kept = kept if writer.written else "; nothing was downloaded, so nothing was kept"
                raise TransferError(
                    f"Could not download {ctx.url} (expected {ctx.expectation()}): {last}; "
                    f"gave up after {requests_made} attempts{kept}.",
                    hint="Check your network connection and proxy settings (HTTPS_PROXY), then retry; or "
                    + ctx.fallback_hint(), kept=writer.written if resume else 0,
                )
            retry.sleep(retry.delay(failures))
        digest = writer.hexdigest()
    return DownloadResult(ctx.url, dest, digest, writer.written, requests_made, restarts)


def _one_request(
    ctx: _Context,
    session: requests.Session,
    writer: HashingWriter,
    timeout: tuple[float, float],
    tick: Callable[[int], None],
    pace: _Pace,
) -> int:
    """One GET, appending to ``writer``; returns 1 if it had to restart from zero."""
    headers = {"Accept-Encoding": "identity"}
    if writer.written:
        headers["Range"] = f"bytes={writer.written}-"
    resp: requests.Response | None = None
    ctx.watchdog.arm(ctx.limits.window)  # the pace rule for the headers: all of them within a window
    try:
        resp = session.get(ctx.url, headers=headers, stream=True, timeout=timeout, verify=True)
    except requests.exceptions.SSLError as exc:
        raise FetchError(
            f"Could not download {ctx.url} (expected {ctx.expectation()}): the TLS certificate check failed "
            f"({_reason(exc)}). zluda-runner never disables certificate verification.",
            hint="If a proxy or company firewall re-signs HTTPS, point REQUESTS_CA_BUNDLE at its CA "
            "certificate and check HTTPS_PROXY; or " + ctx.fallback_hint(),
        ) from exc
    except (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
            requests.exceptions.MissingSchema) as exc:
        raise FetchError(
            _sentence(f"{ctx.url} is not a valid download URL: {_reason(exc)}"),
            hint="Fix the asset URL or the mirror.",
        ) from exc
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
        if not ctx.watchdog.fired:
            raise _Retryable(_connection_problem(exc)) from exc
    except requests.exceptions.RequestException as exc:  # too many redirects, a bad redirect target ...
        raise FetchError(
            _sentence(f"Could not download {ctx.url} (expected {ctx.expectation()}): {_reason(exc)}"),
            hint="The server's answer cannot be followed (a redirect loop or a broken redirect?); "
            + ctx.fallback_hint(),
        ) from exc
    finally:
        ctx.watchdog.disarm()
    if resp is None or ctx.watchdog.fired:  # cut by the watchdog: what came may look whole, never use it
        if resp is not None:
            resp.close()
        raise TransferError(
            f"Could not download {ctx.url} (expected {ctx.expectation()}): the server's response headers "
            f"did not all arrive within {ctx.limits.window:.0f} s; stopped.",
            hint="The server or a proxy is stalling; retry later; or " + ctx.fallback_hint(),
        )
    restarted = 0
    with resp:
        _check_status(ctx, resp, writer.written)
        if resp.status_code == 200 and writer.written:  # the server ignored Range: begin again
            writer.reset()
            restarted = 1
        length = resp.headers.get("Content-Length")
        remaining = int(length) if length and length.isdigit() else None
        total = announced_total(resp, writer.written, remaining)
        if ctx.size is not None and total is not None and total != ctx.size:
            raise ChecksumError(
                f"{ctx.url} announces {total} bytes, but {ctx.expectation()} has {ctx.size} bytes; "
                "nothing more was downloaded and the partial file was removed.",
                hint="A proxy or mirror serves another file: " + ctx.fallback_hint(),
            )
        limit, why = ctx.size_limit(total)
        if total is not None and total > limit:
            raise ctx.too_big(total, limit, why, announced=True)
        if isinstance(tick, Progress) and tick.total is None and total is not None:
            tick.total = total
        received, read_some, eof = 0, body_reader(resp), False
        while not eof:
            buf = writer.buffer()
            view = memoryview(buf)
            filled = 0
            try:
                while filled < len(buf):  # one socket read at a time, so the pace is checked as bytes come
                    want = len(buf) - filled
                    n = read_some(view[filled:])
                    if not n:
                        eof = True
                        break
                    filled += n
                    if writer.written + filled > limit:
                        raise ctx.too_big(writer.written + filled, limit, why)
                    pace.advance(n, writer.written + filled)
                    if n < want:  # the socket is drained for now: hand what came to the file
                        break
            except (
                urllib3.exceptions.HTTPError,
                requests.exceptions.RequestException,
                http.client.HTTPException,
                OSError,
            ) as exc:
                writer.commit(buf, filled)
                raise _Retryable(
                    f"the connection broke after {writer.written} bytes ({_reason(exc)})", restarted
                ) from exc
            except BaseException:
                writer.commit(buf, filled)  # keep what arrived (a resumable download keeps the file)
                raise
            writer.commit(buf, filled)
            received += filled
            tick(filled)
        if remaining is not None and received < remaining:
            raise _Retryable(f"the body ended after {writer.written} bytes", restarted)
    return restarted


class _Pace:
    """Each ``window`` seconds of a download must bring ``min_rate * window`` bytes (across retries)."""

    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx
        self.clock = ctx.limits.clock
        self.start = self.clock()
        self.count = 0

    def advance(self, n: int, written: int) -> None:
        self.count += n
        now = self.clock()
        window = self.ctx.limits.window
        if now - self.start < window:
            return
        rate = self.count / (now - self.start)
        if rate < self.ctx.limits.min_rate:
            raise TransferError(
                f"Could not download {self.ctx.url} (expected {self.ctx.expectation()}): it came at "
                f"{rate:.0f} bytes/s over the last {now - self.start:.0f} s, below the "
                f"{self.ctx.limits.min_rate:.0f} bytes/s a download must keep; stopped after {written} "
                "bytes.",
                hint="The server or a proxy is stalling; retry later (a fetch into the cache resumes where "
                "it stopped); or " + self.ctx.fallback_hint(),
            )
        self.start, self.count = now, 0


def _check_status(ctx: _Context, resp: requests.Response, written: int) -> None:
    status = resp.status_code
    if status == 206 and written:
        start = content_range_start(resp.headers.get("Content-Range", ""))
        if start != written:
            raise _Restart(f"the server resumed at byte {start} instead of {written}")
        return
    if status == 200:
        return
    if status == 416 and written:
        raise _Restart("the server refused to resume (416)")
    if status in (408, 429) or status >= 500:
        raise _Retryable(f"the server answered {status} {resp.reason}")
    hint = ctx.fallback_hint()
    if status == 404:
        hint = "The release may have been removed or renamed upstream; check the manifest's URL; or " + hint
    elif status in (401, 403):
        hint = "The server refused access (rate limit or proxy rules?); retry later; or " + hint
    raise FetchError(
        f"Could not download {ctx.url} (expected {ctx.expectation()}): the server answered "
        f"{status} {resp.reason or ''}".rstrip() + ".",
        hint=hint,
    )
