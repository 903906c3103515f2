"""core/fsutil: the one home of atomic writes (write_if_changed, atomic_output)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zluda_runner.core.fsutil import TMP_PREFIX, atomic_output, write_if_changed


def test_write_if_changed_keeps_an_unchanged_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "gen" / "table.h"
    assert write_if_changed(path, "one\n") is True
    os.utime(path, (1_000_000, 1_000_000))
    assert write_if_changed(path, "one\n") is False
    assert path.stat().st_mtime == 1_000_000
    assert write_if_changed(path, "two\n") is True
    assert path.read_text() == "two\n"
    assert [p.name for p in path.parent.iterdir()] == ["table.h"]


def test_atomic_output_renames_the_program_written_file_under_its_exact_name(tmp_path: Path) -> None:
    dest = tmp_path / "out" / "nvcuda.dll"
    with atomic_output(dest) as tmp:
        assert tmp.name == "nvcuda.dll" and tmp.parent.name.startswith(TMP_PREFIX)
        assert tmp.parent.parent == dest.parent
        tmp.write_bytes(b"MZ")
        assert not dest.exists()
    assert dest.read_bytes() == b"MZ"
    assert [p.name for p in dest.parent.iterdir()] == ["nvcuda.dll"]


def test_atomic_output_leaves_the_old_file_and_no_temporary_on_failure(tmp_path: Path) -> None:
    dest = tmp_path / "lib.so"
    dest.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_output(dest) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("compiler failed")
    assert dest.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["lib.so"]
