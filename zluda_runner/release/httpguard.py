"""HTTP requests checked at every hop and bounded in time, and the wording of their faults.

- :func:`client_url` parses a URL exactly as the HTTP client will use it (requests' own preparation,
  then urllib3's parser): ``http://evil\\@127.0.0.1/`` connects to ``evil``, whatever
  :func:`urllib.parse.urlsplit` says its host is, so every check of a host or scheme goes through it.
- :func:`guarded_session` gives a :class:`requests.Session` whose transport calls a check with the
  URL of every request it is about to send, the first and each redirect hop alike, before it connects
  (a redirect through plain http is refused there, not after the fact by looking at the last URL).
- :class:`Watchdog`: a deadline for a session's requests. When it passes, the sockets of the
  session's connections are shut down, so a read blocked on a server that trickles its headers or
  body (each byte resetting the read time-out) returns at once; the caller then sees ``fired``.
  Each socket is watched itself, once connected: a response with ``Connection: close`` takes the
  socket over from its connection (``conn.sock`` is None while that body is read).
  A thread timer and ``shutdown(2)``: the same on POSIX and Windows.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import weakref
from collections.abc import Callable
from typing import Any

import requests
import requests.adapters
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions
import urllib3.poolmanager
from urllib3.util import Url, parse_url

from zluda_runner.core.errors import FetchError
from zluda_runner.core.redact import redact_text, redact_url
from zluda_runner.core.version import __version__

USER_AGENT = f"zluda-runner/{__version__}"
HopCheck = Callable[[str], None]


def client_url(url: str, what: str = "URL") -> Url:
    """``url`` as the HTTP client will connect to it (scheme, host, port ... after its own preparation).

    Raises FetchError (with a hint) for a URL the client cannot use (``http://[::1``)."""
    prepared = requests.PreparedRequest()
    try:
        prepared.prepare_url(url, None)
        return parse_url(prepared.url or "")
    except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError, ValueError) as exc:
        raise FetchError(
            f"the {what} {shown_url(url)!r} is not a valid URL ({reason(exc)})",
            hint="give a full URL such as https://host/path (an IPv6 host in brackets: https://[::1]:8443/)",
        ) from None


class Watchdog:
    """Shuts the sockets of the connections it watches once ``arm``'s deadline passes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conns: weakref.WeakSet[Any] = weakref.WeakSet()
        self._timer: threading.Timer | None = None
        self.fired = False

    def watch(self, conn: Any) -> None:
        with self._lock:
            self._conns.add(conn)
            fired = self.fired
        if fired:
            _shut(conn)

    def arm(self, seconds: float) -> None:
        self.disarm()
        with self._lock:
            self.fired = False
        timer = threading.Timer(max(0.0, seconds), self._fire)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def disarm(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            conns = list(self._conns)
        for conn in conns:
            _shut(conn)


def _shut(watched: Any) -> None:
    sock = watched if isinstance(watched, socket.socket) else getattr(watched, "sock", None)
    if isinstance(sock, socket.socket) and sock.fileno() >= 0:
        with contextlib.suppress(OSError):  # the plain socket call, also under an SSLSocket
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the blocked read returns at once


class GuardedAdapter(requests.adapters.HTTPAdapter):
    """An adapter that checks each request's URL before sending it and reports its connections."""

    def __init__(self, check: HopCheck | None, watchdog: Watchdog | None) -> None:
        self.check = check
        self.watchdog = watchdog
        super().__init__()

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        if self.check is not None:
            self.check(request.url or "")
        return super().send(request, *args, **kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self._watched(self.poolmanager)

    def proxy_manager_for(self, *args: Any, **kwargs: Any) -> Any:
        return self._watched(super().proxy_manager_for(*args, **kwargs))

    def _watched(self, manager: Any) -> Any:
        dog = getattr(self, "watchdog", None)  # HTTPAdapter.__init__ makes the pool manager first
        # only plain (and HTTP-proxy) pools: a SOCKS manager's own pools must stay, or the proxy is bypassed
        if dog is not None and manager.pool_classes_by_scheme == urllib3.poolmanager.pool_classes_by_scheme:
            manager.pool_classes_by_scheme = _pool_classes(dog)
        return manager


def _pool_classes(dog: Watchdog) -> dict[str, type[urllib3.connectionpool.HTTPConnectionPool]]:
    class Conn(urllib3.connection.HTTPConnection):
        def _new_conn(self) -> socket.socket:
            dog.watch(self)  # while it connects (a TLS handshake too)
            return super()._new_conn()

        def connect(self) -> None:
            super().connect()
            dog.watch(self.sock)  # then the socket itself, whoever holds it

    class TLSConn(Conn, urllib3.connection.HTTPSConnection):
        pass

    class Pool(urllib3.connectionpool.HTTPConnectionPool):
        ConnectionCls = Conn

    class TLSPool(urllib3.connectionpool.HTTPSConnectionPool):
        ConnectionCls = TLSConn

    return {"http": Pool, "https": TLSPool}


def guarded_session(check: HopCheck | None = None, watchdog: Watchdog | None = None) -> requests.Session:
    """A session (our User-Agent; certificates verified as always) checking and timing every hop."""
    session = requests.Session()
    session.headers["User-Agent"] = USER_AGENT
    adapter = GuardedAdapter(check, watchdog)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def shown_url(url: str) -> str:
    """A URL as a message shows it: credentials masked, at most :data:`REASON_CHARS` characters."""
    return clause(redact_url(url))


#: how much of another library's error text a message quotes
REASON_CHARS = 300


def clause(text: str, limit: int = REASON_CHARS) -> str:
    """Another library's text made part of our sentence: one line, at most ``limit`` characters (an
    ellipsis where it was cut), without its closing period (requests ends "Exceeded 30 redirects."
    with one; ours follows)."""
    text = " ".join(text.split()).rstrip(" .")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "\u2026"


def sentence(text: str) -> str:
    """``text`` ended as a sentence: a period unless it ends with one already (or ``?``/``!``/``…``)."""
    text = text.rstrip()
    return text if text.endswith((".", "?", "!", "\u2026")) else text + "."


def reason(exc: BaseException) -> str:
    """The innermost cause's text, for a message: credentials masked, one line, bounded, no closing
    period (:func:`clause`)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    deepest = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        deepest = cur
        nxt = getattr(cur, "reason", None)
        if not isinstance(nxt, BaseException):
            nxt = cur.__cause__ or cur.__context__
        cur = nxt
    return clause(redact_text(str(deepest) or type(deepest).__name__))


def connection_problem(exc: BaseException) -> str:
    text = reason(exc)
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(chain) < 10:
        chain.append(cur)
        nxt = getattr(cur, "reason", None)
        cur = nxt if isinstance(nxt, BaseException) else (cur.__cause__ or cur.__context__)
    if any(isinstance(e, urllib3.exceptions.NameResolutionError) for e in chain):
        return f"the host name could not be resolved (DNS failure: {text})"
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "the connection was refused (nothing listens there, or a firewall blocks it)"
    if isinstance(exc, requests.exceptions.Timeout):
        return f"the server did not answer in time ({text})"
    return f"the connection failed ({text})"
