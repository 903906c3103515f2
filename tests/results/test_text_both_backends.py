"""Text that one backend keeps, the other keeps too (issue 20, nothing-lost items 20 and 23).

On 5c673db a run whose argv was not valid UTF-8 (a file name in Latin-1, as Python decodes it: lone
surrogates) was not recorded at all, and PostgreSQL refused a NUL that SQLite stored (with a hint
about table permissions). Both backends, a real PostgreSQL from the fixture; these fail there.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.results import reports
from zluda_runner.core.settings import Settings
from zluda_runner.doctor.model import Check, DoctorReport, Status
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import import_bundles
from zluda_runner.results.recording import build_run, record_report
from zluda_runner.results.schema import ResultRow, RunRecord, StoreRefusedValueError, canonical_json

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

RECORD_ARGV = """
import json, sys
from zluda_runner.core.settings import Settings
from zluda_runner.doctor.model import Check, DoctorReport, Status
from zluda_runner.host.facts import HostFacts
from zluda_runner.results.recording import record_report
facts = HostFacts("linux", "x86_64", "Debian 12", "3.11")
report = DoctorReport(facts, [Check("hip_runtime", Status.OK, "found")])
out = record_report("doctor", report, settings=Settings(), db_url=sys.argv[1],
                    command=["zluda-run", *sys.argv[2:]], started_at="2025-07-01T10:00:00.000000Z")
print(json.dumps({"recorded": out.recorded, "warning": out.warning, "run_id": out.run_id}))
"""


def test_a_run_whose_argv_is_not_utf8_is_recorded(store_url: str) -> None:
    """The process gets the bytes of a Latin-1 file name in its real argv, as a shell would pass them."""
    proc = subprocess.run([sys.executable, "-c", RECORD_ARGV, store_url, "run", b"/data/caf\xe9.py"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=ENV)
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    assert outcome["recorded"] is True, outcome["warning"]
    with make_store(store_url).open() as store:
        run = store.get_run(outcome["run_id"])
    assert run.command == ["zluda-run", "run", "/data/caf\\xe9.py"]  # the byte is kept, readable


def _doctor_with(message: str) -> DoctorReport:
    return DoctorReport(reports.doctor_report().facts, [Check("hip_runtime", Status.FAIL, message)])


def test_a_nul_is_stored_alike_by_both_backends(store_url: str, tmp_path: Path) -> None:
    report = _doctor_with("libamdhip64.so\x00trailing")
    out = record_report("doctor", report, settings=Settings(cache_dir=tmp_path), db_url=store_url,
                        command=["zluda-run", "doctor\x00"], host=reports.HOST,
                        started_at="2025-07-01T10:00:00.000000Z")
    assert out.recorded, out.warning
    with make_store(store_url).open() as store:
        run = store.get_run(out.run_id or "")
    assert run.items[0].detail == "libamdhip64.so\ufffdtrailing" and run.command[1] == "doctor\ufffd"


def test_a_bundle_from_a_store_that_kept_a_nul_imports_into_both(store_url: str, tmp_path: Path) -> None:
    """What 5c673db's SQLite stored and exported (a NUL in a detail, in the run's id) imports anywhere."""
    run = build_run("doctor", _doctor_with("ok"), command=["zluda-run", "doctor"], host=reports.HOST,
                    started_at="2025-07-02T10:00:00.000000Z").to_dict()
    run["items"][0]["detail"] = "a\x00b"
    body = {k: v for k, v in run.items() if k != "run_id"}
    run["run_id"] = hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps({"format": "zluda-runner-results", "version": 1}) + "\n"
                    + json.dumps({"run": run}) + "\n", encoding="utf-8")
    with make_store(store_url).open() as store:
        assert import_bundles(store, [path]) == (1, 0)
        assert import_bundles(store, [path]) == (0, 1)  # the same bundle again: the same stored run
        (stored,) = store.get_runs([r.run_id for r in store.list_runs()])
    assert stored.items[0].detail == "a\ufffdb"


def test_a_value_postgresql_refuses_is_not_blamed_on_table_permissions(pg_server) -> None:
    """Past the cleaning (a NUL put straight into a record): the error says a value was refused."""
    url = pg_server.new_database()
    run = RunRecord(kind="doctor", started_at="2025-07-03T10:00:00.000000Z",
                    items=[ResultRow("hip_runtime", "fail", False, "a\x00b")])
    run = dataclasses.replace(run, run_id="ab" * 32)
    with make_store(url).open() as store, pytest.raises(StoreRefusedValueError) as caught:
        store.insert_run(run)
    assert caught.value.kind == "store-refused-value"  # not a refused request (table permissions)
    assert "NUL" in caught.value.message  # PostgreSQL's own word for the value
