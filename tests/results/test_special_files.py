"""Writes to a file that is not a regular file: a device node, a FIFO (issue 20, nothing-lost item 2).

``results export FILE``, ``--html FILE`` and ``--trace-out FILE`` wrote a temporary file and renamed it
over the target, so as root ``/dev/null`` or ``/dev/full`` became a regular 0600 file. Every such write
goes through :mod:`zluda_runner.core.fsutil`'s atomic writes, which now write a special file in place
(atomic rename only for a regular file or a new name). The device nodes are private ones made with
``os.mknod`` in the test's folder (never ``/dev`` itself), so these need root; the FIFO ones do not.
These tests fail on 5c673db (the node or FIFO replaced by a regular file)."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from tests.results.test_matrix_cli import _cli, plant
from zluda_runner.core.fsutil import atomic_write_json, atomic_write_text

NULL, FULL = os.makedev(1, 3), os.makedev(1, 7)  # Linux's null and full devices


@pytest.fixture
def nodes(tmp_path: Path) -> dict[str, Path]:
    """Private ``null`` and ``full`` character devices in the test's folder."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("making a device node (os.mknod) needs root; the defect was seen as root")
    out = {}
    for name, dev in (("null", NULL), ("full", FULL)):
        path = tmp_path / "dev" / name
        path.parent.mkdir(exist_ok=True)
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, dev)
        except OSError as exc:
            pytest.skip(f"cannot make a device node here ({exc.strerror}): the container forbids mknod")
        out[name] = path
    return out


def _is_node(path: Path, dev: int) -> bool:
    st = os.lstat(path)
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == dev


@pytest.fixture
def store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    plant(url, tmp_path)
    return url


def test_export_and_html_to_a_null_device_write_in_place(nodes: dict[str, Path], store: str,
                                                         tmp_path: Path) -> None:
    null = nodes["null"]
    code, out = _cli("--results-db", store, "export", str(null), tmp_path=tmp_path)
    assert code == 0 and f"exported 7 run(s) to {null}" in out, out
    assert _is_node(null, NULL)
    code, out = _cli("--results-db", store, "matrix", "--html", str(null), tmp_path=tmp_path)
    assert code == 0, out
    assert _is_node(null, NULL)


def test_a_full_device_is_an_error_and_stays_a_device(nodes: dict[str, Path], store: str,
                                                      tmp_path: Path) -> None:
    full = nodes["full"]
    code, out = _cli("--results-db", store, "export", str(full), tmp_path=tmp_path)
    assert code == 1 and os.strerror(errno.ENOSPC) in out and "Traceback" not in out, out  # the system's word
    assert _is_node(full, FULL)
    code, out = _cli("--results-db", store, "matrix", "--html", str(full), "--json", tmp_path=tmp_path)
    error = json.loads(out)
    assert code == 1 and str(full) in error["error"] and os.strerror(errno.ENOSPC) in error["error"], out
    assert _is_node(full, FULL)


def test_the_atomic_writes_behind_trace_out_and_records_keep_a_device(nodes: dict[str, Path]) -> None:
    """``--trace-out`` writes with atomic_write_text; cache records with the durable json write."""
    atomic_write_text(nodes["null"], '{"trace": 1}\n')
    atomic_write_json(nodes["null"], {"a": 1}, durable=True)  # no fsync of a device, no rename
    assert _is_node(nodes["null"], NULL)
    with pytest.raises(OSError) as info:
        atomic_write_text(nodes["full"], "x" * 10)
    assert info.value.errno == errno.ENOSPC
    assert _is_node(nodes["full"], FULL)
    leftovers = [p.name for p in nodes["null"].parent.iterdir() if p.name not in ("null", "full")]
    assert leftovers == []  # no temporary file was made beside them


def test_export_to_a_fifo_with_a_reader_writes_into_it(store: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there before the write starts
    try:
        code, out = _cli("--results-db", store, "export", str(fifo), tmp_path=tmp_path)
        assert code == 0, out
        data = b""
        while chunk := os.read(reader, 1 << 16):
            data += chunk
    finally:
        os.close(reader)
    lines = data.decode().splitlines()
    assert json.loads(lines[0])["format"] == "zluda-runner-results" and len(lines) == 8
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_export_to_a_fifo_nobody_reads_fails_at_once(store: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, out = _cli("--results-db", store, "export", str(fifo), "--json", tmp_path=tmp_path)  # never a hang
    error = json.loads(out)
    assert code == 1 and error["kind"] == "output-file" and str(fifo) in error["error"], out
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
