"""Known-good locks are shared: a recorded ``find`` keeps its lock (item ``lock``), ``results export`` and
``import`` carry it (a bad one refused at import, the field named), ``results matrix`` shows it per GPU x
torch, and ``find --from FILE|URL`` tries the locks of a bundle for this GPU first."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.finder.conftest import WORKLOAD
from tests.httpserve import serving
from tests.telemetry.fake_sysfs import card_device, one_gpu_host
from zluda_runner import Options, export_results, import_results, results_matrix
from zluda_runner.api.find import find
from zluda_runner.core.errors import LockError
from zluda_runner.finder.known import known_first, locks_from
from zluda_runner.finder.model import Candidate
from zluda_runner.release.lockfile import SHARED_ITEM, hash_tree, lock_from_shared
from zluda_runner.results.schema import ResultsStoreError, RunRecord, canonical_json, id_of


def _found(standins: dict[str, Path], pywrap: Path, tmp_path: Path, db: Path) -> Path:
    """A find over (wrong, cudnn) recorded in ``db`` (the cuDNN-off variant locked, not proven on the GPU),
    exported: the bundle."""
    options = Options(cache_dir=tmp_path / "cache", results_db=str(db))
    report = find([str(pywrap), str(WORKLOAD)], candidates=[standins["wrong"], standins["cudnn"]],
                  only_candidates=True, min_speedup=0.0, lock=None, options=options)
    assert report.exit_code == 3 and report.lock is not None and report.lock.variant == "cudnn-off"
    bundle = tmp_path / "shared.jsonl"
    assert export_results(bundle, options) == 1
    return bundle


def test_a_lock_travels_through_export_and_import_into_the_matrix(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    bundle = _found(standins, pywrap, tmp_path, tmp_path / "mine.db")
    theirs = Options(cache_dir=tmp_path / "cache", results_db=str(tmp_path / "theirs.db"))
    assert import_results([bundle], theirs) == (1, 0)
    matrix = results_matrix(theirs)
    (known,) = matrix.locks
    assert (known.release, known.variant, known.proven_on_gpu) == ("cudnn", "cudnn-off", False)
    # the lock as shared: no folder of the machine it was found on, the files by their hashes
    assert known.lock.release.root is None and known.lock.release.ref == "cudnn"
    assert known.lock.release.files == hash_tree(standins["cudnn"])
    assert known.lock.env == {"ZLUDA_RUNNER_TORCH_DEFAULTS": "cudnn-off"}
    assert [c.status for c in known.lock.criteria] == ["pass", "pass", "not shown", "pass", "pass"]
    # the views: the terminal's names it with how far it was proven; the JSON carries the lock
    proc = subprocess.run([sys.executable, "-m", "zluda_runner", "--results-db", str(tmp_path / "theirs.db"),
                           "results", "matrix", "--json"], env=find_env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)["locks"]
    assert [(k["release"], k["variant"], k["proven_on_gpu"], k["lock"]["variant"]) for k in shown] == [
        ("cudnn", "cudnn-off", False, "cudnn-off")]


def test_a_bundle_with_a_bad_lock_is_refused_at_import_naming_the_field(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    bundle = _found(standins, pywrap, tmp_path, tmp_path / "mine.db")
    header, line = bundle.read_text(encoding="utf-8").splitlines()
    run = json.loads(line)["run"]
    for item in run["items"]:
        if item["item"] == SHARED_ITEM:
            lock = json.loads(item["detail"])
            lock["variant"] = "rm -rf /"  # not a variant find tries
            item["detail"] = json.dumps(lock)
    record = RunRecord.from_dict({k: v for k, v in run.items() if k != "run_id"})
    run["run_id"] = id_of(canonical_json(record.content()))  # a consistent run: only the lock is wrong
    bad = tmp_path / "bad.jsonl"
    bad.write_text(header + "\n" + canonical_json({"run": run}) + "\n", encoding="utf-8")
    theirs = Options(results_db=str(tmp_path / "theirs.db"))
    with pytest.raises(ResultsStoreError) as refused:
        import_results([bad], theirs)
    assert refused.value.kind == "bundle" and "field 'variant'" in refused.value.raw_message
    assert not (tmp_path / "theirs.db").exists() or results_matrix(theirs).runs == 0  # nothing stored


def test_find_from_a_bundle_tries_its_known_good_lock_first(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    bundle = _found(standins, pywrap, tmp_path, tmp_path / "mine.db")
    given = [w for kind in ("abort", "wrong", "cudnn") for w in ("--candidate", str(standins[kind]))]
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "cache"), "--results-db",
         str(tmp_path / "theirs.db"), "--json", "find", "--from", str(bundle), "--only-candidates", *given,
         "--min-speedup", "0", "--lock", str(tmp_path / "zluda.lock"), "--", str(pywrap), str(WORKLOAD)],
        env=find_env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 3, proc.stderr
    report = json.loads(proc.stdout)
    tried = [(v["candidate"]["ref"], v["candidate"]["variant"], v["status"]) for v in report["verdicts"]]
    assert tried == [(str(standins["cudnn"]), "cudnn-off", "unproven")]  # the lock's, first; nothing else ran
    assert report["left"] == 3  # abort, wrong, cudnn (defaults): queued, never needed


def test_find_from_a_url_reads_the_bundle_bounded_and_keeps_no_copy(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    bundle = _found(standins, pywrap, tmp_path, tmp_path / "mine.db")
    body = bundle.read_bytes()

    class Serve(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    cache = tmp_path / "from-cache"
    with serving(Serve) as base:
        (known,) = locks_from(f"{base}/shared.jsonl", cache)
    assert (known.release, known.variant) == ("cudnn", "cudnn-off")
    assert list(cache.iterdir()) == []  # the temporary copy is gone


def test_a_lock_of_another_gpu_or_of_a_folder_not_given_is_not_tried_first(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    root = Path(find_env["ZLUDA_RUNNER_ROOT"])
    card = one_gpu_host(root, busy=0)
    options = Options(cache_dir=tmp_path / "cache", results_db=str(tmp_path / "gpu.db"))
    report = find([str(pywrap), str(WORKLOAD), "--gpu", str(card_device(root, card.card))],
                  candidates=[standins["ok"]], only_candidates=True, min_speedup=0.0, interval=0.005,
                  lock=None, options=options, root=root)
    assert report.exit_code == 0 and report.lock is not None
    export_results(tmp_path / "gpu.jsonl", options)
    (known,) = locks_from(str(tmp_path / "gpu.jsonl"), None)
    assert known.proven_on_gpu and known.lock.host.gfx
    ok = Candidate("dir", str(standins["ok"]))
    assert known_first([known], known.lock.host.gfx, [ok], "b")[0] == [Candidate("dir", ok.ref, "defaults")]
    other, notes = known_first([known], "gfx9999", [ok], "b")
    assert other == [] and len(notes) == 1 and known.lock.host.gfx in notes[0]  # said, with the GPU
    elsewhere, notes = known_first([known], known.lock.host.gfx, [Candidate("dir", str(standins["wrong"]))],
                                   "b")
    assert elsewhere == [] and len(notes) == 1  # no folder given here has the locked files


def test_a_shared_lock_is_bounded_and_validated() -> None:
    with pytest.raises(LockError) as deep:
        lock_from_shared("[" * 50 + "]" * 50, "x")
    assert deep.value.kind == "lock"
    with pytest.raises(LockError) as wrong:
        lock_from_shared('{"schema": 1}', "x")
    assert "field 'release'" in wrong.value.raw_message


def test_a_later_find_tries_the_known_good_lock_of_this_store_first(
    standins: dict[str, Path], pywrap: Path, find_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "mine.db"
    _found(standins, pywrap, tmp_path, db)
    again = find([str(pywrap), str(WORKLOAD)], candidates=[standins["abort"], standins["cudnn"]],
                 only_candidates=True, min_speedup=0.0, lock=None,
                 options=Options(cache_dir=tmp_path / "cache", results_db=str(db)))
    assert [(v.candidate.ref, v.candidate.variant, v.status) for v in again.verdicts] == [
        (str(standins["cudnn"]), "cudnn-off", "unproven")]  # abort (first given) never ran
