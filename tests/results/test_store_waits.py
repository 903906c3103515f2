"""Every wait on the results store is bounded, and readers never wait for writers (issue 20,
nothing-lost item 6).

On 5c673db every open of a PostgreSQL store took the migration lock with no timeout (a stalled
writer hung ``results list`` and ``results import``), an insert waited forever on a row another
session held, a server that stopped answering hung the client, and on SQLite ``results list`` failed
after 30 s while another process held the write lock. Each case here runs in its own process under a
timeout (a hang fails the test), with the bound set small: the outcome (a listing, a warning, an
error) is asserted, never how long it took.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.results import reports
from zluda_runner.core.settings import Settings
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import export_bundle
from zluda_runner.results.recording import build_run, record_report
from zluda_runner.results.store import _run_row

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
HANG = 120  # seconds: only a hang gets near this
STARTED = "2025-04-01T10:00:00.000000Z"


def _record(url: str, tmp_path: Path, n: int = 0) -> str:
    out = record_report("torch-ops", reports.torch_ops(5, {1}), settings=Settings(cache_dir=tmp_path),
                        db_url=url, command=["zluda-run", "probe", str(n)], host=reports.HOST,
                        started_at=STARTED, release=reports.FORK, target=reports.TORCH_118)
    assert out.recorded and out.run_id, out.warning
    return out.run_id


def _cli(url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "cache"), "--results-db", url,
         "results", *args], capture_output=True, text=True, timeout=HANG, cwd=ROOT, env=ENV,
        stdin=subprocess.DEVNULL)


SQLITE_WRITER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE runs SET verdict = verdict")
print("holding", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


@contextmanager
def _sqlite_writer(path: str) -> Iterator[None]:
    """Another process holding the SQLite store's write lock until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", SQLITE_WRITER, path], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        yield
    finally:
        proc.communicate("\n", timeout=HANG)


def test_sqlite_list_and_show_do_not_wait_for_another_processs_write(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    run_id = _record(url, tmp_path)
    with _sqlite_writer(url):
        listed = _cli(url, tmp_path, "list")
        shown = _cli(url, tmp_path, "show", run_id[:12])
    assert listed.returncode == 0, listed.stderr
    assert run_id[:12] in listed.stdout
    assert shown.returncode == 0 and "op001.fp16" in shown.stdout, shown.stderr


RECORDER = """
import json, sys
from zluda_runner.results import backends
from zluda_runner.core.settings import Settings
from zluda_runner.results.recording import record_report
from zluda_runner.probe.model import ProbeReport
backends.BUSY_TIMEOUT_MS = 100
backends.LOCK_TIMEOUT_MS = 100
report = ProbeReport.from_dict(json.loads(sys.argv[2]))
out = record_report("torch-ops", report, settings=Settings(), db_url=sys.argv[1],
                    command=["zluda-run", "probe", "0"],
                    host=json.loads(sys.argv[3]), started_at=sys.argv[4], release=json.loads(sys.argv[5]),
                    target=json.loads(sys.argv[6]))
print(json.dumps({"recorded": out.recorded, "warning": out.warning, "error_kind": out.error_kind}))
"""


def _record_in_child(url: str) -> dict[str, Any]:
    """record_report in its own process with every bound at 100 ms; its outcome."""
    args = [url, json.dumps(reports.torch_ops(5, {1}).to_dict()), json.dumps(reports.HOST), STARTED,
            json.dumps(reports.FORK), json.dumps(reports.TORCH_118)]
    proc = subprocess.run([sys.executable, "-c", RECORDER, *args], capture_output=True, text=True,
                          timeout=HANG, cwd=ROOT, env=ENV)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def test_sqlite_recording_behind_a_held_write_lock_is_a_warning(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    _record(url, tmp_path, n=1)
    with _sqlite_writer(url):
        outcome = _record_in_child(url)
    assert (outcome["recorded"], outcome["error_kind"]) == (False, "store-busy")
    assert url in outcome["warning"] and "database is locked" in outcome["warning"]  # SQLite's word


def _pg_conn(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def test_postgres_list_and_import_do_not_wait_for_a_stalled_writer(pg_server, tmp_path: Path) -> None:
    url = pg_server.new_database()
    source = str(tmp_path / "src" / "results.db")
    _record(source, tmp_path, n=7)
    bundle = tmp_path / "b.jsonl"
    with make_store(source).open() as store:
        export_bundle(store, bundle)
    run_id = _record(url, tmp_path)
    stalled = _pg_conn(url)  # a writer that took the migration lock and stopped
    try:
        stalled.execute("BEGIN")
        stalled.execute("SELECT pg_advisory_xact_lock(%s)", (0x7A6C7564,))
        listed = _cli(url, tmp_path, "list")
        imported = _cli(url, tmp_path, "import", str(bundle))
    finally:
        stalled.close()
    assert listed.returncode == 0 and run_id[:12] in listed.stdout, listed.stderr
    assert imported.returncode == 0 and "imported 1 run(s)" in imported.stdout, imported.stderr


def test_postgres_recording_behind_a_held_row_is_a_warning(pg_server, tmp_path: Path) -> None:
    url = pg_server.new_database()
    _record(url, tmp_path, n=3)  # the schema exists
    run = build_run("torch-ops", reports.torch_ops(5, {1}), command=["zluda-run", "probe", "0"],
                    host=reports.HOST, started_at=STARTED, release=reports.FORK, target=reports.TORCH_118)
    stalled = make_store(url).open()  # a writer that inserted this very run and stopped before COMMIT
    try:
        cur = stalled._conn.cursor()
        cur.execute("BEGIN")
        assert stalled._insert_heads(cur, [_run_row(run, STARTED)]) == [True]
        outcome = _record_in_child(url)
    finally:
        stalled.close()
    assert (outcome["recorded"], outcome["error_kind"]) == (False, "store-busy")
    assert "lock" in outcome["warning"]  # PostgreSQL's own word (lock_timeout)


STALLED_READER = """
import sys
from zluda_runner.results import backends
from zluda_runner.results.schema import ResultsStoreError
backends.STALL_S = 0.5
store = backends.make_store(sys.argv[1]).open()
pid = store._conn.execute("SELECT pg_backend_pid()").fetchone()[0]
print(pid, flush=True)
sys.stdin.readline()  # the server process serving us is stopped now
try:
    store.list_runs()
except ResultsStoreError as exc:
    print("error:", exc.kind, flush=True)
"""


def test_postgres_server_that_stops_answering_is_an_error_not_a_hang(pg_server, tmp_path: Path) -> None:
    url = pg_server.new_database()
    _record(url, tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", STALLED_READER, url], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)
    backend = 0
    try:
        assert proc.stdout is not None and proc.stdin is not None
        backend = int(proc.stdout.readline())
        os.kill(backend, signal.SIGSTOP)
        out, err = proc.communicate("go\n", timeout=HANG)
    finally:
        if backend:
            os.kill(backend, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.splitlines()[-1] == "error: store-unreachable", out + err
