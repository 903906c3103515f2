"""core/fsutil: the one home of atomic writes (write_if_changed, atomic_output)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from zluda_runner.core.fsutil import TMP_PREFIX, atomic_output, file_kind, write_if_changed


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


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_a_written_file_has_the_permissions_a_plain_create_gives_and_a_replaced_one_keeps_its_own(
    tmp_path: Path,
) -> None:
    """A new file gets 0o666 less the umask (an exported bundle, a report: meant to be shared), as
    ``open(path, "w")`` makes it, not mkstemp's private 0o600; a replaced file keeps its mode."""
    script = ("import os, sys\n"
              "from pathlib import Path\n"
              "from zluda_runner.core.fsutil import atomic_write_text\n"
              "os.umask(int(sys.argv[2], 8))\n"
              "atomic_write_text(Path(sys.argv[1]), 'x')\n")

    def write(path: Path, umask: str) -> int:
        subprocess.run([sys.executable, "-c", script, str(path), umask], check=True)
        return stat.S_IMODE(os.stat(path).st_mode)

    assert write(tmp_path / "shared.jsonl", "022") == 0o644
    assert write(tmp_path / "group.html", "027") == 0o640
    assert write(tmp_path / "private.txt", "077") == 0o600
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    os.chmod(kept, 0o604)
    assert write(kept, "077") == 0o604 and kept.read_text() == "x"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_file_kind_names_each_type_of_file_once(tmp_path: Path) -> None:
    """One name per stat type, for every refusal of a file by its type (manifest, cache, archive member,
    results store, open_regular); the names differ from each other and say nothing of a folder for a
    file that is none."""
    formats = (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK, stat.S_IFIFO, stat.S_IFCHR, stat.S_IFBLK,
               stat.S_IFSOCK)
    names = [file_kind(fmt | 0o644) for fmt in formats]
    assert len(set(names)) == len(formats)
    assert file_kind(os.lstat(tmp_path).st_mode) == file_kind(stat.S_IFDIR)
    assert "0o" not in file_kind(stat.S_IFDIR)  # a known type shows no mode number
    assert oct(0o070000) in file_kind(0o070000 | 0o644)  # no known type: its type bits, not a guess


def test_read_regular_is_the_bounded_read_of_a_file(tmp_path: Path) -> None:
    """read_regular (the manifest's, a lock's, ab's records' and every small host file's read): at most
    ``limit`` bytes of a regular file; a larger one refused with its size, or (``more``) its first
    ``limit + 1`` bytes; a FIFO or a folder refused unread, naming what it is."""
    from zluda_runner.core.fsutil import FileTooLargeError, NotRegularFileError, read_regular

    data = tmp_path / "data"
    data.write_bytes(b"0123456789")
    assert read_regular(data, 10) == b"0123456789"
    assert read_regular(data, 4, more=True) == b"01234"
    with pytest.raises(FileTooLargeError) as large:
        read_regular(data, 4)
    assert (large.value.size, large.value.limit, large.value.filename) == (10, 4, str(data))
    for path, fmt in ((tmp_path, stat.S_IFDIR), (tmp_path / "pipe", stat.S_IFIFO)):
        if fmt == stat.S_IFIFO:
            os.mkfifo(path)  # no writer: opening it to read would wait for ever
        with pytest.raises(NotRegularFileError) as refused:
            read_regular(path, 10)
        assert file_kind(fmt) in str(refused.value.strerror)
