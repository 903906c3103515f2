"""Bundles round-trip exactly and import idempotently; two writer processes lose nothing."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.results import reports
from zluda_runner.core.settings import Settings
from zluda_runner.results import bundle as bundle_mod
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import export_bundle, import_bundles, read_bundle
from zluda_runner.results.recording import record_report
from zluda_runner.results.schema import SCHEMA_VERSION, BundleError, ResultsStoreError

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _fill(url: str, tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path)
    home = Path.home()
    runs = [
        ("torch-ops", reports.torch_ops(40, {5, 9})),
        ("ab", reports.ab_report(1.2)),
        ("trace", reports.trace_report()),
        ("verify-load", reports.verify_result(home)),
        ("doctor", reports.doctor_report()),
    ]
    for n, (kind, report) in enumerate(runs):
        out = record_report(
            kind,
            report,
            settings=settings,
            db_url=url,
            release=reports.FORK,
            target=reports.TORCH_118,
            command=["zluda-run", kind, f"{home}/project/infer.py"],
            started_at=f"2025-02-0{n + 1}T10:00:00.000000Z",
            host={**reports.HOST, "hostname": socket.gethostname()},
        )
        assert out.recorded, out.warning


def _run_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()[1:]


def test_export_import_round_trips_exactly_and_idempotently(make_url, tmp_path: Path) -> None:
    source, target = make_url(), make_url()
    _fill(source, tmp_path)
    first = tmp_path / "a.jsonl"
    with make_store(source).open() as store:
        assert export_bundle(store, first) == 5
        originals = store.get_runs([r.run_id for r in store.list_runs()])
    with make_store(target).open() as store:
        assert import_bundles(store, [first]) == (5, 0)
        assert import_bundles(store, [first, first]) == (0, 10)
        assert len(store.list_runs()) == 5
        copies = store.get_runs([r.run_id for r in store.list_runs()])
        second = tmp_path / "b.jsonl"
        export_bundle(store, second)
    assert [r.to_dict() for r in copies] == [r.to_dict() for r in originals]
    assert _run_lines(second) == _run_lines(first)
    header = json.loads(first.read_text().splitlines()[0])
    assert header["format"] == "zluda-runner-results" and header["version"] == 1 and header["runs"] == 5


def test_bundle_holds_nothing_personal(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    _fill(url, tmp_path)
    out = tmp_path / "b.jsonl"
    with make_store(url).open() as store:
        export_bundle(store, out)
    text = out.read_text(encoding="utf-8")
    assert str(Path.home()) not in text and "~/project/infer.py" in text
    assert socket.gethostname() not in text
    runs = list(read_bundle(out))
    assert all(len(r.host["host_id"]) == 16 for r in runs)


def test_since_limits_the_export(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    _fill(url, tmp_path)
    out = tmp_path / "b.jsonl"
    with make_store(url).open() as store:
        assert export_bundle(store, out, since="2025-02-04") == 2
        with pytest.raises(ResultsStoreError, match="not a date"):
            export_bundle(store, out, since="last tuesday")


def _bundle_with(tmp_path: Path, line: str, header: str | None = None) -> Path:
    path = tmp_path / "bad.jsonl"
    head = header if header is not None else json.dumps({"format": "zluda-runner-results", "version": 1})
    path.write_text(head + "\n" + line + "\n", encoding="utf-8")
    return path


def test_bad_bundles_are_refused_with_the_line_and_nothing_is_stored(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    _fill(url, tmp_path)
    good = tmp_path / "good.jsonl"
    with make_store(url).open() as store:
        export_bundle(store, good)
    lines = good.read_text().splitlines()
    edited = json.loads(lines[1])
    edited["run"]["summary"]["passed"] = 40  # make the numbers look better
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join([lines[0], lines[2], json.dumps(edited)]) + "\n")
    fresh = str(tmp_path / "fresh" / "results.db")
    with make_store(fresh).open() as store:
        with pytest.raises(ResultsStoreError) as caught:
            import_bundles(store, [tampered])
        assert f"{tampered}, line 3: " in caught.value.message and "run_id" in caught.value.message
        assert len(store.list_runs()) == 0  # the good line before it was not stored either
        with pytest.raises(ResultsStoreError) as caught:
            import_bundles(store, [other := _bundle_with(tmp_path, "{}", header='{"format": "other"}')])
        assert f"{other}, line 1: " in caught.value.message
        assert '"zluda-runner-results"' in caught.value.message  # the format it looks for
        with pytest.raises(ResultsStoreError, match="version 2"):
            import_bundles(
                store, [_bundle_with(tmp_path, "", header='{"format": "zluda-runner-results", "version": 2}')]
            )
        with pytest.raises(BundleError) as caught:
            import_bundles(store, [_bundle_with(tmp_path, "[" * 50 + "]" * 50)])
        assert (caught.value.problem, caught.value.line) == ("too-deep", 2)
        with pytest.raises(ResultsStoreError, match="line 2"):
            import_bundles(store, [_bundle_with(tmp_path, '{"run": {"kind": "probe", "items": "x"}}')])
        with pytest.raises(ResultsStoreError) as caught:
            import_bundles(store, [tmp_path / "missing.jsonl"])
        assert caught.value.kind == "results-store"
        assert str(tmp_path / "missing.jsonl") in caught.value.message


def test_overlong_line_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle_mod, "MAX_LINE_BYTES", 100)
    path = _bundle_with(tmp_path, json.dumps({"run": {"kind": "probe", "x": "y" * 200}}))
    with pytest.raises(ResultsStoreError) as caught:
        list(read_bundle(path))
    assert f"{path}, line 2 " in caught.value.message and " 100 bytes" in caught.value.message


WRITER = """
import sys
import time
from pathlib import Path
from zluda_runner.core.settings import Settings
from zluda_runner.probe.model import CaseResult, ProbeReport
from zluda_runner.results.recording import record_report

url, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
Path(sys.argv[4]).touch()  # ready
while not Path(sys.argv[5]).exists():  # start together
    time.sleep(0.001)
for n in range(count):
    cases = [CaseResult(id=f"{tag}.{n}.{i}", area="t", title="t", status="pass") for i in range(50)]
    out = record_report("torch-ops", ProbeReport(kind="torch", cases=cases), settings=Settings(),
                        command=[tag, str(n)], db_url=url)
    if not out.recorded:
        print(out.warning, flush=True)
        sys.exit(1)
    print(out.run_id, flush=True)
"""


def test_two_writer_processes_lose_nothing(store_url: str, tmp_path: Path) -> None:
    with make_store(store_url).open():
        pass  # the schema exists before the race, as on any machine that recorded once
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), store_url, tag, "40", str(tmp_path / f"ready-{tag}"), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=ENV,
        )
        for tag in ("one", "two")
    ]
    try:
        while not all((tmp_path / f"ready-{t}").exists() for t in ("one", "two")):
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.01)
        go.touch()
        results = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, out + err
    ids = {line for out, _ in results for line in out.split()}
    assert len(ids) == 80
    with make_store(store_url).open() as store:
        stored = store.list_runs()
        assert {r.run_id for r in stored} == ids
        assert all(len(r.items) == 50 for r in store.get_runs(sorted(ids)))


def test_two_processes_creating_a_fresh_store_at_once(store_url: str, tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    go = tmp_path / "go"
    go.touch()
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), store_url, tag, "3", str(tmp_path / tag), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=ENV,
        )
        for tag in ("one", "two")
    ]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    with make_store(store_url).open() as store:
        assert len(store.list_runs()) == 6 and store.schema_version() == SCHEMA_VERSION
