"""A PostgreSQL server that completes start-up and then never answers (issue 27): `results list` and
a probe's recording were still waiting at 100 s on 7859508 (the client-side bound was 150 s). Now the
wait is bounded (connect, statement, and the client's own bound on every call): the reader gets an
error, the recording a warning, and the run moves on. A password holding ``@`` is the URL's real
userinfo (up to the last ``@``): libpq read it up to the first, and its error quoted the rest as a host
(``ss@127.0.0.1``). The fake server (127.0.0.1, started here) speaks just enough of the start-up; each
case runs in its own process under a generous safety timeout, the outcome asserted, never its time."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from zluda_runner.core.redact import redact_text

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
HANG = 120  # seconds: only a hang gets near this

pytest.importorskip("psycopg")


def _message(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!I", len(body) + 4) + body


_STARTED = (_message(b"R", struct.pack("!I", 0))  # AuthenticationOk
            + b"".join(_message(b"S", k + b"\0" + v + b"\0") for k, v in (
                (b"server_version", b"16.0"), (b"client_encoding", b"UTF8"), (b"DateStyle", b"ISO, MDY"),
                (b"integer_datetimes", b"on"), (b"standard_conforming_strings", b"on")))
            + _message(b"K", struct.pack("!II", 1, 2)) + _message(b"Z", b"I"))


def _serve(conn: socket.socket, stop: threading.Event) -> None:
    with conn:
        try:
            while not stop.is_set():
                head = conn.recv(8, socket.MSG_WAITALL)
                if len(head) < 8:
                    return
                size, code = struct.unpack("!II", head)
                conn.recv(size - 8, socket.MSG_WAITALL) if size > 8 else b""
                if code in (80877103, 80877104):  # SSLRequest, GSSENCRequest: no
                    conn.sendall(b"N")
                    continue
                conn.sendall(_STARTED)  # the start-up completes ...
                stop.wait()  # ... and then nothing is ever answered
                return
        except OSError:
            return


@pytest.fixture
def silent_server() -> Iterator[int]:
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_serve, args=(conn, stop), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    stop.set()
    listener.close()


# the client-side bound these children run under: the store's own (STALL_S, 15 s) is what a user waits
# at most; the behaviour asserted here (an error or a warning, never a hang) is the same at any bound,
# and 15 s of a worker's time twice over was the largest wait in the suite
STALL = "import zluda_runner.results.backends as b; b.STALL_S = 2.0\n"


def _child(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=HANG, cwd=ROOT,
                              env=ENV, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still waiting after {HANG} s: the store's deadlines were not enforced")


def test_results_list_on_a_server_that_never_answers_is_an_error(silent_server: int, tmp_path: Path) -> None:
    url = f"postgresql://user:p@ss@127.0.0.1:{silent_server}/db"  # the password holds an '@'
    cli = STALL + "import sys; from zluda_runner.cli import main; sys.argv[0] = 'zluda-run'; main()"
    out = _child("-c", cli, "--cache-dir", str(tmp_path), "--results-db", url, "--json", "results", "list")
    assert out.returncode == 1, out.stdout + out.stderr
    error = json.loads(out.stdout)
    assert error["exit_code"] == 1 and "127.0.0.1" in error["error"]  # it reached the real host
    assert "p@ss" not in out.stdout + out.stderr and "ss@" not in out.stdout + out.stderr


_RECORDER = """
import json, sys
from zluda_runner.core.settings import Settings
from zluda_runner.results.recording import record_report
from tests.results import reports
out = record_report("torch-ops", reports.torch_ops(5, {1}), settings=Settings(), db_url=sys.argv[1],
                    command=["zluda-run", "probe"], host=reports.HOST, release=reports.FORK,
                    target=reports.TORCH_118)
print(json.dumps({"recorded": out.recorded, "warning": out.warning}))
"""


def test_recording_on_a_server_that_never_answers_warns_and_moves_on(silent_server: int) -> None:
    out = _child("-c", STALL + _RECORDER, f"postgresql://user@127.0.0.1:{silent_server}/db")
    assert out.returncode == 0, out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["recorded"] is False and outcome["warning"]


def test_a_drivers_words_lose_the_password_tail_it_read_as_a_host() -> None:
    url = "postgresql://user:p@ss@127.0.0.1/db"
    said = redact_text('could not translate host name "ss@127.0.0.1" to address (p@ss)', url)
    assert "ss@" not in said and "p@ss" not in said and "127.0.0.1" in said
