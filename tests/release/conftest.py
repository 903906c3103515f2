"""Fixtures for the release tests (fetch, cache, unpack): an HTTP(S) server on 127.0.0.1, archive builders."""

from __future__ import annotations

import hashlib
import io
import shutil
import socket
import ssl
import subprocess
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from zluda_runner.release.fetch import RetryPolicy


@dataclass
class ServedRequest:
    path: str
    range_header: str | None
    status: int
    bytes_sent: int
    seq: int = 0  # the order the request arrived in (a response may be recorded after the next one)


@dataclass
class AssetServer:
    """What the test server serves, how it misbehaves, and what it saw."""

    files: dict[str, bytes] = field(default_factory=dict)
    range_support: bool = True
    drop_after: int | None = None  # cut the body after this many bytes ...
    drops_left: int = 0  # ... on this many requests
    fail_status: int | None = None  # answer this status ...
    fails_left: int = 0  # ... on this many requests
    hold: threading.Event | None = None  # wait for it before sending a body
    redirects: dict[str, str] = field(default_factory=dict)  # path -> Location of a 302
    unsized: dict[str, int] = field(default_factory=dict)  # path -> bytes sent with no Content-Length
    announce: dict[str, int] = field(default_factory=dict)  # path -> a Content-Length that lies
    trickle: float | None = None  # send the body one byte at a time, this many seconds apart
    pause_after: int | None = None  # send this many bytes, then wait for ``resume_event``
    resume_event: threading.Event = field(default_factory=threading.Event)
    paused: threading.Event = field(default_factory=threading.Event)  # set once paused
    arrived: threading.Event = field(default_factory=threading.Event)  # set when any GET comes in
    requests: list[ServedRequest] = field(default_factory=list)
    next_seq: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    base: str = ""

    def url(self, path: str) -> str:
        return self.base + path

    def add(self, path: str, data: bytes) -> str:
        self.files[path] = data
        return self.url(path)

    def served(self, path: str) -> list[ServedRequest]:
        with self.lock:
            return sorted((r for r in self.requests if r.path == path), key=lambda r: r.seq)


def _handler(state: AssetServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

        def _record(self, status: int, sent: int) -> None:
            with state.lock:
                seq = getattr(self, "_seq", state.next_seq)
                state.requests.append(ServedRequest(self.path, self.headers.get("Range"), status, sent, seq))

        def do_GET(self) -> None:
            with state.lock:  # arrival order: the client may send its retry before we record this one
                self._seq = state.next_seq
                state.next_seq += 1
            state.arrived.set()
            if self.path in state.redirects:
                self.send_response(302)
                self.send_header("Location", state.redirects[self.path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                self._record(302, 0)
                return
            with state.lock:
                fail = state.fail_status if state.fails_left > 0 else None
                if fail:
                    state.fails_left -= 1
            data = state.files.get(self.path)
            if fail or data is None:
                status = fail or 404
                body = b"not here\n"
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True
                self._record(status, 0)
                return
            if self.path in state.unsized:
                self._send_unsized(data, state.unsized[self.path])
                return
            start = 0
            status = 200
            rng = self.headers.get("Range")
            if state.range_support and rng and rng.startswith("bytes=") and rng.endswith("-"):
                start = int(rng[len("bytes=") : -1])
                status = 206
            body = data[start:]
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(state.announce.get(self.path, len(body))))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Connection", "close")
            self.end_headers()
            if state.hold is not None:
                state.hold.wait(timeout=60)
            with state.lock:
                drop = state.drop_after if state.drops_left > 0 else None
                if drop is not None:
                    state.drops_left -= 1
            if drop is not None:
                self.wfile.write(body[:drop])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                self._record(status, min(drop, len(body)))
                return
            if state.trickle is not None or state.pause_after is not None:
                self._send_slowly(status, body)
                return
            self.wfile.write(body)
            self.close_connection = True
            self._record(status, len(body))

        def _send_unsized(self, data: bytes, total: int) -> None:
            """A close-delimited body (no Content-Length) of ``total`` bytes, repeating ``data``."""
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            sent = 0
            chunk = (data * (65536 // max(1, len(data)) + 1))[:65536]
            try:
                while sent < total:
                    piece = chunk[: total - sent]
                    self.wfile.write(piece)
                    sent += len(piece)
            except OSError:  # the client hung up
                pass
            self.close_connection = True
            self._record(200, sent)

        def _send_slowly(self, status: int, body: bytes) -> None:
            sent = 0
            try:
                if state.pause_after is not None:
                    self.wfile.write(body[: state.pause_after])
                    self.wfile.flush()
                    sent = min(len(body), state.pause_after)
                    state.paused.set()
                    state.resume_event.wait(timeout=60)
                for i in range(sent, len(body)):
                    self.wfile.write(body[i: i + 1])
                    self.wfile.flush()
                    sent += 1
                    if state.trickle:
                        time.sleep(state.trickle)
            except OSError:
                pass
            self.close_connection = True
            self._record(status, sent)

    return Handler


def _serve(state: AssetServer, context: ssl.SSLContext | None = None) -> Iterator[AssetServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    scheme = "http"
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    state.base = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    # serve_forever polls for shutdown every poll_interval (0.5 s by default): every test paid that at
    # teardown; 0.02 s makes the fetch tests' teardown ~25x cheaper.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        if state.hold is not None:
            state.hold.set()
        state.resume_event.set()
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _no_proxy_no_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback tests must not go through a proxy or a mirror from the environment."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                "ZLUDA_RUNNER_MIRROR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def server() -> Iterator[AssetServer]:
    yield from _serve(AssetServer())


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[AssetServer]:
    from ..conftest import require

    openssl = shutil.which("openssl")
    require(openssl is not None, "openssl command-line tool not installed (apt-get install openssl)")
    assert openssl is not None
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    yield from _serve(AssetServer(), context)


@pytest.fixture
def fast_retry() -> RetryPolicy:
    """Retries without real sleeping; the delays asked for are kept in ``.sleep.calls``."""
    return RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05, sleep=RecordingSleep())


class RecordingSleep:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


# ----------------------------------------------------------------------------- archives


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tar_gz(entries: list[tuple]) -> bytes:
    """Entries: ("file", name, bytes[, mode]) | ("dir", name) | ("symlink", name, target)
    | ("hardlink", name, target) | ("fifo", name) | ("chr", name)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for entry in entries:
            kind, name = entry[0], entry[1]
            info = tarfile.TarInfo(name)
            data = None
            if kind == "file":
                data = entry[2]
                info.size = len(data)
                info.mode = entry[3] if len(entry) > 3 else 0o644
            elif kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, entry[2]
            elif kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, entry[2]
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
            elif kind == "chr":
                info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
            else:
                raise ValueError(kind)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def zip_bytes(entries: list[tuple]) -> bytes:
    """Entries: ("file", name, bytes) | ("symlink", name, target)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for entry in entries:
            kind, name = entry[0], entry[1]
            info = zipfile.ZipInfo(name)
            if kind == "file":
                info.external_attr = 0o100644 << 16
                zf.writestr(info, entry[2])
            elif kind == "symlink":
                info.external_attr = 0o120777 << 16
                zf.writestr(info, entry[2])
            else:
                raise ValueError(kind)
    return buf.getvalue()


ZLUDA_LIKE = [
    ("dir", "zluda"),
    ("file", "zluda/libcuda.so.1", b"\x7fELF fake driver" * 100, 0o755),
    ("symlink", "zluda/libcuda.so", "libcuda.so.1"),
    ("file", "zluda/libcublas.so.13", b"fake cublas" * 50),
    ("dir", "zluda/trace"),
    ("file", "zluda/trace/libcuda.so.1", b"tracer"),
]


@dataclass
class FakeRelease:
    id: str


@dataclass
class FakeAsset:
    name: str
    url: str
    sha256: str | None
    format: str
    size: int | None = None


@pytest.fixture
def kit() -> SimpleNamespace:
    """Archive builders and fake manifest objects for the tests."""
    return SimpleNamespace(
        sha256=sha256, tar_gz=tar_gz, zip_bytes=zip_bytes, ZLUDA_LIKE=ZLUDA_LIKE,
        Release=FakeRelease, Asset=FakeAsset,
    )


def cache_files(cache: Path) -> list[str]:
    """Everything in the cache apart from locks and the empty top-level folders (what a failure
    must not leave): files, links and any folder below the top level (a half-unpacked tree,
    a work folder in ``tmp/``, an empty ``releases/<id>/``)."""
    if not cache.exists():
        return []
    return sorted(
        str(p.relative_to(cache)) for p in cache.rglob("*")
        if p.relative_to(cache).parts[0] != "locks"
        and (p.is_file() or p.is_symlink() or len(p.relative_to(cache).parts) > 1)
    )


@pytest.fixture
def cache_listing():
    return cache_files
