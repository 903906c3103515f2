"""Every redirect hop is checked, as the HTTP client parses it; slow headers and bodies are bounded
(issue 20, nothing-lost items 3, 4 and 7).

- ``manifest update`` checked only the first and the last URL: https -> http -> https was accepted,
  and ``http://HOST\\@127.0.0.1/`` passed the loopback check (urlsplit's host) but connected to HOST
  (the client's host). Here the "elsewhere" host is 127.0.0.2, a non-loopback address to the check
  that Linux still routes to this machine, so nothing leaves it.
- An https mirror redirecting to plain http still had the hash it served trusted on first use.
- ``manifest update``'s budget was checked only between body chunks, and ``fetch``'s pace rule
  only for the body: a server trickling its headers (or a body in one chunk) held either forever.
  A body trickled with ``Connection: close`` still held it on 7859508 (issue 27: the socket had
  passed from the connection to the response, out of the watchdog's reach).
  Those run in a child process under a timeout: on 5c673db they hung (the timeout is what failed).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.release.conftest import AssetServer, _handler
from tests.release.test_bounded_and_update import _doc
from zluda_runner.core.errors import FetchError, ManifestError
from zluda_runner.release.cache import ensure_release
from zluda_runner.release.manifest import cached_manifest_path
from zluda_runner.release.update import update_manifest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def elsewhere() -> Iterator[AssetServer]:
    """A plain-http server on 127.0.0.2: 'not loopback' to the check, still this machine."""
    state = AssetServer()
    try:
        httpd = ThreadingHTTPServer(("127.0.0.2", 0), _handler(state))
    except OSError as exc:
        pytest.skip(f"cannot bind 127.0.0.2 here: {exc}")
    httpd.daemon_threads = True
    state.base = f"http://127.0.0.2:{httpd.server_address[1]}"
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield state
    httpd.shutdown()
    httpd.server_close()


def test_manifest_redirect_through_plain_http_is_refused_at_that_hop(tmp_path, tls_server, elsewhere,
                                                                     monkeypatch) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "cert.pem"))
    cache = tmp_path / "cache"
    tls_server.add("/m.json", _doc(99))
    elsewhere.redirects["/mid"] = tls_server.url("/m.json")  # ... and back to https
    tls_server.redirects["/start"] = elsewhere.url("/mid")  # https -> plain http ...
    with pytest.raises(ManifestError) as info:
        update_manifest(cache, tls_server.url("/start"))
    assert elsewhere.url("/mid") in info.value.message  # the plain-http hop refused
    assert not elsewhere.arrived.is_set()  # refused before connecting there
    assert not cached_manifest_path(cache).exists()


def test_manifest_url_is_checked_as_the_client_parses_it(tmp_path, server, elsewhere) -> None:
    server.add("/m.json", _doc(99))
    port = elsewhere.base.rsplit(":", 1)[1]
    loopback = server.base[len("http://"):]
    tricky = f"http://127.0.0.2:{port}\\@{loopback}/m.json"  # urlsplit's host: 127.0.0.1; the client's: .2
    elsewhere.redirects[f"/%5C@{loopback}/m.json"] = server.url("/m.json")  # and on to loopback
    with pytest.raises(ManifestError, match=r"http://127\.0\.0\.2"):  # the host the client would reach
        update_manifest(tmp_path / "cache", tricky)
    assert not elsewhere.arrived.is_set() and not server.arrived.is_set()  # refused before connecting
    assert not cached_manifest_path(tmp_path / "cache").exists()


def test_https_mirror_redirecting_to_http_is_not_trusted_on_first_use(tmp_path, tls_server, server, kit,
                                                                      monkeypatch) -> None:
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tmp_path / "cert.pem"))
    payload = kit.tar_gz(kit.ZLUDA_LIKE)
    path = "/vosen/ZLUDA/releases/download/v5/zluda-linux-abc1234.tar.gz"
    server.add(path, payload)  # where an attacker on the way would answer
    tls_server.redirects["/base" + path] = server.url(path)
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", tls_server.url("/base"))  # an https mirror
    asset = kit.Asset(name="zluda-linux-abc1234.tar.gz", url="https://github.com" + path, sha256=None,
                      format="tar.gz")
    cache = tmp_path / "cache"
    with pytest.raises(FetchError) as info:
        ensure_release(kit.Release("fork-3.9.5"), asset, cache, trust_on_first_use=True)
    assert info.value.kind == "fetch" and server.url(path) in info.value.message  # the plain-http hop, named
    assert "ZLUDA_RUNNER_MIRROR" in (info.value.hint or "")  # the way on: an https mirror
    assert not server.arrived.is_set()  # not one request over plain http
    assert not (cache / "trust.json").exists() or "sha256" not in (cache / "trust.json").read_text()


# --------------------------------------------------------------------------- slow servers


@pytest.fixture
def trickler() -> Iterator[dict[str, str]]:
    """127.0.0.1 servers that send a response one byte every 20 ms, never finishing in time."""
    stop = threading.Event()
    socks: list[socket.socket] = []

    def serve(listener: socket.socket, head: bytes, slow: bytes) -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=feed, args=(conn, head, slow), daemon=True).start()

    def feed(conn: socket.socket, head: bytes, slow: bytes) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(head)
                for i in range(len(slow)):
                    if stop.wait(0.02):
                        return
                    conn.sendall(slow[i:i + 1])
            except OSError:
                return

    urls = {}
    shapes = {
        "headers": (b"HTTP/1.1 200 OK\r\nX-Slow: ", b"a" * 60000),
        "body": (b"HTTP/1.1 200 OK\r\nContent-Length: 60000\r\n\r\n", b" " * 60000),
        # the response takes the socket over from its connection (conn.sock is None): the budget still holds
        "closing": (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b" " * 60000),
    }
    for name, (head, slow) in shapes.items():
        listener = socket.create_server(("127.0.0.1", 0))
        socks.append(listener)
        threading.Thread(target=serve, args=(listener, head, slow), daemon=True).start()
        urls[name] = f"http://127.0.0.1:{listener.getsockname()[1]}/m.json"
    yield urls
    stop.set()
    for s in socks:
        s.close()


def _child(code: str, *args: str) -> dict[str, str]:
    try:
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=30,
                             cwd=REPO, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("still waiting after 30 s: the deadline was not enforced")
    assert out.returncode == 0, out.stderr
    result: dict[str, str] = json.loads(out.stdout)
    return result


_UPDATE = """
import json, sys
from pathlib import Path
from zluda_runner.release.update import update_manifest
try:
    update_manifest(Path(sys.argv[1]), sys.argv[2], total_seconds=1.0)
    print(json.dumps({"error": None}))
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "message": getattr(exc, "message", str(exc))}))
"""

_FETCH = """
import json, sys
from pathlib import Path
from zluda_runner.release.fetch import Limits, RetryPolicy, download
try:
    download(sys.argv[2], Path(sys.argv[1]) / "x.tar.gz", limits=Limits(window=1.0),
             retry=RetryPolicy(attempts=1))
    print(json.dumps({"error": None}))
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "message": getattr(exc, "message", str(exc))}))
"""


@pytest.mark.parametrize("shape", ["headers", "body", "closing"])
def test_manifest_update_budget_covers_slow_headers_and_body(tmp_path, trickler, shape) -> None:
    got = _child(_UPDATE, str(tmp_path / "cache"), trickler[shape])
    assert got["error"] == "FetchError" and " 1 s" in got["message"], got  # the budget
    assert not cached_manifest_path(tmp_path / "cache").exists()


def test_fetch_pace_rule_covers_the_headers(tmp_path, trickler) -> None:
    got = _child(_FETCH, str(tmp_path), trickler["headers"])
    assert got["error"] == "TransferError" and "headers" in got["message"] and " 1 s" in got["message"], got
    assert not (tmp_path / "x.tar.gz").exists()
