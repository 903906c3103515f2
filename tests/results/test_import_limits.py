"""What an imported bundle may hold, how much memory importing it takes, and what its errors say
(issue 20, nothing-lost items 11 and 18).

On 5c673db an import applied none of the limits recording applies (text, item name, argv, keys),
took any string as ``started_at`` (``"zzz"`` stayed the latest run forever), held a whole batch of
200 runs in memory (about 5x the bundle), said "is empty" for ``<(...)``, called a run from a newer
zluda-runner "edited or damaged" and reported a blank first line on line 2. These tests fail there.
Memory is tested with a resource limit (RLIMIT_AS in a child process), not a clock.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.results import reports
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import import_bundles
from zluda_runner.results.recording import build_run
from zluda_runner.results.schema import (
    MAX_ARGV,
    MAX_NAME,
    MAX_TEXT,
    BundleError,
    ResultsStoreError,
    canonical_json,
)
from zluda_runner.results.store import ResultsStore

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
MAX_KEYS = 32  # zluda_runner.results.schema.MAX_KEYS, what recording keeps
HEADER = json.dumps({"format": "zluda-runner-results", "version": 1, "schema": 2})


def _run_dict() -> dict[str, Any]:
    run = build_run("torch-ops", reports.torch_ops(3, {1}), command=["zluda-run", "probe"], host=reports.HOST,
                    started_at="2025-06-01T10:00:00.000000Z", release=reports.FORK, target=reports.TORCH_118)
    return dict(run.to_dict())


def _sealed(run: dict[str, Any]) -> dict[str, Any]:
    """The run with the id its content has (as an honest exporter would write it)."""
    body = {k: v for k, v in run.items() if k != "run_id"}
    return {**run, "run_id": hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()}


def _bundle(tmp_path: Path, *runs: dict[str, Any], header: str = HEADER, before: str = "") -> Path:
    path = tmp_path / "b.jsonl"
    lines = [header, *(json.dumps({"run": r}) for r in runs)]
    path.write_text(before + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def _store(tmp_path: Path) -> ResultsStore:
    return make_store(str(tmp_path / "s" / "results.db")).open()


def _refused(match: str) -> Any:
    return pytest.raises(ResultsStoreError, match=match)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(run: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = run
        for name in parents:
            node = node[int(name)] if name.isdigit() else node[name]
        node[last] = value

    return edit


EDITS = {
    "detail": (_set("items.0.detail", "d" * (MAX_TEXT + 1)), "detail is 4001 characters"),
    "item name": (_set("items.0.item", "n" * (MAX_NAME + 1)), "name is 513 characters"),
    "status": (_set("items.0.status", "s" * (MAX_NAME + 1)), "status is 513 characters"),
    "argv word": (_set("command", ["w" * (MAX_TEXT + 1)]), "command word is 4001 characters"),
    "argv": (_set("command", ["w"] * (MAX_ARGV + 1)), "command has 257 words"),
    "host keys": (_set("host", {f"k{i}": "v" for i in range(MAX_KEYS + 1)}), "host has 33 keys"),
    "key length": (_set("target", {"k" * 201: "v"}), "a key of target is 201 characters"),
    "host value": (_set("host.gfx", "g" * (MAX_TEXT + 1)), "host 'gfx' is 4001 characters"),
    "numbers": (_set("items.0.numbers", {f"n{i}": 1.0 for i in range(MAX_KEYS + 1)}), "has 33 numbers"),
    "zzz": (_set("started_at", "zzz"), "started_at 'zzz' is not a time"),
    "no such day": (_set("started_at", "2025-13-45T10:00:00Z"), "is not a real time"),
    "far future": (_set("started_at", "9999-12-31T23:59:59.000000Z"), "is in the future"),
    "date only": (_set("started_at", "2025-06-01"), "is not a time"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_import_applies_the_limits_recording_applies(tmp_path: Path, name: str) -> None:
    edit, message = EDITS[name]
    run = _run_dict()
    edit(run)
    with _store(tmp_path) as store, _refused("line 3: .*" + message.replace("(", r"\(")):
        import_bundles(store, [_bundle(tmp_path, _run_dict(), _sealed(run))])
        assert len(store.list_runs()) == 0


def test_a_run_id_must_be_a_sha256(tmp_path: Path) -> None:
    run = _run_dict()
    with _store(tmp_path) as store, _refused("line 2: run_id must be 64 hex digits"):
        import_bundles(store, [_bundle(tmp_path, {**run, "run_id": "zz"})])


def test_a_run_at_every_limit_still_imports(tmp_path: Path) -> None:
    run = _run_dict()
    run["items"][0].update(item="n" * MAX_NAME, detail="d" * MAX_TEXT, status="s" * MAX_NAME)
    run["command"] = ["w" * MAX_TEXT] * MAX_ARGV
    run["host"] = {("k" * 199 + f"{i:x}")[-200:]: "v" * MAX_TEXT for i in range(MAX_KEYS)}
    with make_store(str(tmp_path / "s" / "results.db")).open() as store:
        assert import_bundles(store, [_bundle(tmp_path, _sealed(run))]) == (1, 0)


IMPORT_UNDER_LIMIT = """
import resource, sys
from pathlib import Path
from zluda_runner.results.backends import make_store
from zluda_runner.results.bundle import import_bundles
store = make_store(sys.argv[1]).open()
len(store.list_runs())
vm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:")) * 1024
limit = vm + int(sys.argv[3]) * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    print("imported", import_bundles(store, [Path(sys.argv[2])]), flush=True)
except MemoryError:
    print("MemoryError", flush=True)
    sys.exit(3)
"""


def test_importing_a_bundle_takes_bounded_memory(tmp_path: Path) -> None:
    """A 40 MB bundle of 130 runs imports with 80 MiB of address space to spare (on 5c673db a batch of
    up to 200 runs, here all of them, was held at once: several times the bundle)."""
    run = _run_dict()
    item = run["items"][0]
    run["items"] = [{**item, "item": f"op{i:05d}", "detail": "x" * 100} for i in range(2000)]
    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as out:
        out.write(HEADER + "\n")
        for n in range(130):
            one = copy.copy(run)
            one["started_at"] = f"2025-06-01T10:{n // 60:02d}:{n % 60:02d}.000000Z"
            out.write(json.dumps({"run": _sealed(one)}) + "\n")
    assert path.stat().st_size > 40_000_000
    url = str(tmp_path / "s" / "results.db")
    proc = subprocess.run([sys.executable, "-c", IMPORT_UNDER_LIMIT, url, str(path), "80"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, env=ENV)
    assert proc.returncode == 0 and "imported (130, 0)" in proc.stdout, proc.stdout + proc.stderr[-2000:]


def _cli(tmp_path: Path, *args: str, pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "c"), "results", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT, env=ENV,
                          stdin=subprocess.DEVNULL, pass_fds=pass_fds)


def test_import_through_process_substitution_says_what_it_is(tmp_path: Path) -> None:
    """``results import <(cat b.jsonl)``: the path is /dev/fd/N, a pipe; not 'is empty'."""
    text = _bundle(tmp_path, _sealed(_run_dict())).read_bytes()
    read, write = os.pipe()
    try:
        os.write(write, text)
        os.close(write)
        out = _cli(tmp_path, "import", f"/dev/fd/{read}", pass_fds=(read,))
        with _store(tmp_path) as store, pytest.raises(BundleError) as caught:
            import_bundles(store, [Path(f"/dev/fd/{read}")])
    finally:
        os.close(read)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "is empty" not in out.stderr and "Traceback" not in out.stderr
    assert (caught.value.problem, caught.value.line) == ("not-a-file", None)  # a pipe: not read as empty


def test_a_run_from_a_newer_zluda_runner_is_not_called_damaged(tmp_path: Path) -> None:
    run = _sealed({**_run_dict(), "power_w": 300})  # a field a later schema added, in its id
    newer = json.dumps({"format": "zluda-runner-results", "version": 1, "schema": 3})
    for header in (newer, HEADER):
        with _store(tmp_path) as store, pytest.raises(ResultsStoreError) as caught:
            import_bundles(store, [_bundle(tmp_path, run, header=header)])
        assert isinstance(caught.value, BundleError), caught.value
        assert (caught.value.problem, caught.value.line) == ("newer", 2), caught.value  # not "edited"
    version2 = json.dumps({"format": "zluda-runner-results", "version": 2})
    with _store(tmp_path) as store, _refused("line 1: bundle version 2 was written by a newer"):
        import_bundles(store, [_bundle(tmp_path, run, header=version2)])


def test_a_blank_first_line_is_reported_on_line_1(tmp_path: Path) -> None:
    with _store(tmp_path) as store, _refused(r"line 1 is blank: a bundle's first line is its header"):
        import_bundles(store, [_bundle(tmp_path, _sealed(_run_dict()), before="\n")])
