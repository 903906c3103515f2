"""Where a results store is, and what is not one (issue 20, nothing-lost item 14).

On 5c673db ``sqlite:///rel.db`` and ``sqlite:///:memory:`` made files at ``/``; a device or FIFO given
as the store got "mv /dev/null ... aside" advice (a FIFO hung the open); a store in a read-only folder
could not even be listed. These tests fail there."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.results.test_matrix_cli import _cli, plant

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def _not_at_root(name: str) -> Iterator[Path]:
    """``/<name>`` must not appear; if the code under test made it anyway, it is removed after."""
    at_root = Path("/") / name
    existed = at_root.exists()
    try:
        yield at_root
    finally:
        if not existed and at_root.exists():
            at_root.unlink()


def test_a_relative_sqlite_url_is_in_the_current_folder(tmp_path: Path, monkeypatch) -> None:
    name = f"zluda-runner-test-{uuid.uuid4().hex}.db"
    monkeypatch.chdir(tmp_path)
    bundle = tmp_path / "b.jsonl"
    bundle.write_text(json.dumps({"format": "zluda-runner-results", "version": 1}) + "\n", encoding="utf-8")
    with _not_at_root(name) as at_root:
        code, out = _cli("--results-db", f"sqlite:///{name}", "list", "--json", tmp_path=tmp_path)
        error = json.loads(out)  # a reader makes no store
        assert code == 1 and error["kind"] == "no-results-store", out
        assert f"{name} ({tmp_path / name})" in error["error"], out
        code, out = _cli("--results-db", f"sqlite:///{name}", "import", str(bundle), tmp_path=tmp_path)
        assert code == 0, out
        assert not at_root.exists(), "a file was made at /"
        assert (tmp_path / name).is_file()  # sqlite:///rel.db is rel.db here, as SQLAlchemy reads it
        code, out = _cli("--results-db", f"sqlite:///{name}", "list", "--json", tmp_path=tmp_path)
        assert code == 0 and json.loads(out)["runs"] == [], out
    absolute = tmp_path / "abs.db"
    code, out = _cli("--results-db", f"sqlite:///{absolute}", "import", str(bundle), tmp_path=tmp_path)
    assert code == 0 and absolute.is_file(), out  # 4 slashes: the absolute path


def test_an_in_memory_sqlite_url_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for url in ("sqlite:///:memory:", ":memory:"):
        with _not_at_root(":memory:") as at_root:
            code, out = _cli("--results-db", url, "list", "--json", tmp_path=tmp_path)
            error = json.loads(out)
            assert code == 1 and error["kind"] == "results-store" and ":memory:" in error["error"], (url, out)
            assert not at_root.exists() and not (tmp_path / ":memory:").exists()


def test_a_fifo_as_the_store_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "results.db"
    os.mkfifo(fifo)
    argv = [sys.executable, "-m", "zluda_runner", "--json", "results", "--results-db", str(fifo), "list"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 1 and "Traceback" not in out.stderr, (out.stdout, out.stderr)
    error = json.loads(out.stdout)  # the data, not the wording folded to the terminal's width
    assert error["kind"] == "results-store" and str(fifo) in error["error"], error
    assert "FIFO" in error["error"]
    assert "mv " not in error["error"] + (error.get("hint") or "")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_device_as_the_store_gets_no_move_it_aside_advice(tmp_path: Path) -> None:
    node = tmp_path / "null"  # a private node, never /dev itself
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (OSError, AttributeError) as exc:
        pytest.skip(f"a device node needs root (os.mknod): {exc}")
    code, out = _cli("--results-db", str(node), "list", "--json", tmp_path=tmp_path)
    error = json.loads(out)
    assert code == 1 and error["kind"] == "results-store" and str(node) in error["error"], out
    assert "mv " not in out
    assert stat.S_ISCHR(os.lstat(node).st_mode)


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """``folder`` made read-only: chmod for a user; root ignores modes, so the immutable attribute."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot make a folder read-only as root here (chattr +i: {done.stderr.strip()})")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_store_in_a_read_only_folder_can_be_listed_not_added_to(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    url = str(shared / "results.db")
    plant(url, tmp_path)
    bundle = tmp_path / "b.jsonl"
    assert _cli("--results-db", url, "export", str(bundle), tmp_path=tmp_path)[0] == 0
    assert sorted(p.name for p in shared.iterdir()) == ["results.db"]  # no -wal/-shm left
    with _read_only(shared):
        code, out = _cli("--results-db", url, "list", "--json", tmp_path=tmp_path)
        assert code == 0, out
        assert len(json.loads(out)["runs"]) == 7
        run_id = json.loads(out)["runs"][0]["run_id"]
        code, out = _cli("--results-db", url, "show", run_id[:10], tmp_path=tmp_path)
        assert code == 0, out
        code, out = _cli("--results-db", f"sqlite:///{url}", "import", str(bundle), "--json",
                         tmp_path=tmp_path)
        error = json.loads(out)
        assert (code, error["kind"]) == (1, "read-only-store") and "mv " not in error["hint"], out
        assert sorted(p.name for p in shared.iterdir()) == ["results.db"]
