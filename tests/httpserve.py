"""One real HTTP server on the loopback for a test: :func:`serving` runs a request handler class in a thread
for the length of a ``with`` block and gives its base URL (``http://127.0.0.1:PORT``). The tests that fetch
over HTTP use it rather than each starting and stopping a server of its own; the fetch tests' server with
TLS, trickled bodies and held responses (tests/release/conftest.py) is its own."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1") -> Iterator[str]:
    """``handler`` served on ``host`` (a free port) while the block runs: the server's base URL. Stopped and
    closed after, whatever the block raised; it polls for that every 20 ms (0.5 s by default: every test
    paid it at teardown)."""
    server = ThreadingHTTPServer((host, 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
