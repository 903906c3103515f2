"""Safe extraction: legitimate ZLUDA-like trees unpack; every escape is refused before writing."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from zluda_runner.core.errors import ArchiveError, UnsafeArchiveError
from zluda_runner.release.unpack import archive_format, archive_stem, safe_extract, unpacked_limit


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_tar_gz_with_links_and_exec_bits(tmp_path, kit):
    entries = [*kit.ZLUDA_LIKE, ("hardlink", "zluda/libcublas.so.12", "zluda/libcublas.so.13")]
    archive = _write(tmp_path, "z.tar.gz", kit.tar_gz(entries))
    dest = tmp_path / "out"
    names = safe_extract(archive, "tar.gz", dest)
    assert "zluda/libcuda.so" in names
    link = dest / "zluda" / "libcuda.so"
    assert link.is_symlink() and os.readlink(link) == "libcuda.so.1"
    assert link.read_bytes() == b"\x7fELF fake driver" * 100
    assert os.access(dest / "zluda" / "libcuda.so.1", os.X_OK)
    assert not os.access(dest / "zluda" / "libcublas.so.13", os.X_OK)
    assert (dest / "zluda" / "libcublas.so.12").read_bytes() == b"fake cublas" * 50
    assert (dest / "zluda" / "trace" / "libcuda.so.1").read_bytes() == b"tracer"


def test_zip_with_backslash_names(tmp_path, kit):
    archive = _write(tmp_path, "z.zip", kit.zip_bytes([("file", "ZLUDA\\nvcuda.dll", b"MZ"),
                                                         ("file", "ZLUDA/zluda.exe", b"MZexe")]))
    dest = tmp_path / "out"
    safe_extract(archive, "zip", dest)
    assert (dest / "ZLUDA" / "nvcuda.dll").read_bytes() == b"MZ"
    assert (dest / "ZLUDA" / "zluda.exe").read_bytes() == b"MZexe"


@pytest.mark.parametrize(
    ("fmt", "entries", "needle"),
    [
        ("zip", [("file", "ok.txt", b"x"), ("file", "../evil.txt", b"pwned")], "'..'"),
        ("zip", [("file", "/abs-evil.txt", b"pwned")], "absolute"),
        ("zip", [("file", "C:\\Windows\\evil.dll", b"pwned")], "absolute"),
        ("tar.gz", [("file", "ok.txt", b"x"), ("file", "a/../../evil.txt", b"pwned")], "'..'"),
        ("tar.gz", [("file", "/tmp/abs-evil.txt", b"pwned")], "absolute"),
        ("tar.gz", [("symlink", "lib", "../../outside")], "outside"),
        ("tar.gz", [("symlink", "lib", "/etc/passwd")], "absolute"),
        ("tar.gz", [("dir", "d"), ("symlink", "d/up", "../..")], "outside"),
        ("tar.gz", [("hardlink", "h", "../evil.txt")], "'..'"),
        ("tar.gz", [("hardlink", "h", "not-in-archive")], "hard link"),
        ("tar.gz", [("dir", "sub"), ("symlink", "d", "sub"), ("file", "d/x", b"x")], "through the link"),
        ("tar.gz", [("file", "f", b"1"), ("symlink", "f", "g")], "twice"),
        ("tar.gz", [("fifo", "pipe")], "FIFO"),
        ("tar.gz", [("chr", "null")], "character device"),
        ("zip", [("symlink", "lib", "../../../etc")], "outside"),
    ],
)
def test_unsafe_members_refused_before_writing(tmp_path, kit, fmt, entries, needle):
    data = kit.tar_gz(entries) if fmt == "tar.gz" else kit.zip_bytes(entries)
    work = tmp_path / "work"
    work.mkdir()
    archive = _write(work, "bad." + fmt, data)
    dest = work / "a" / "b" / "out"
    with pytest.raises(UnsafeArchiveError) as info:
        safe_extract(archive, fmt, dest)
    assert needle in info.value.message
    assert info.value.hint
    assert _tree(dest) == []  # checked before anything is written
    assert _tree(work) == ["a", "a/b", "a/b/out", "bad." + fmt]  # nothing written outside either
    assert not Path("/tmp/abs-evil.txt").exists()


def test_link_redirected_by_a_later_link_is_caught_on_disk(tmp_path, kit):
    # lexically "l1 -> l2/.." stays inside; once l2 -> "." exists it resolves to the parent.
    chain = kit.tar_gz([("symlink", "l1", "l2/.."), ("symlink", "l2", ".")])
    archive = _write(tmp_path, "chain.tar.gz", chain)
    dest = tmp_path / "out"
    with pytest.raises(UnsafeArchiveError) as info:
        safe_extract(archive, "tar.gz", dest)
    assert info.value.kind == "unsafe-archive" and "'l1' -> 'l2/..'" in info.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.tar.gz", "out"]


def test_truncated_tar_gz_is_an_archive_error(tmp_path, kit):
    data = kit.tar_gz([("file", "big.bin", os.urandom(200_000))])
    archive = _write(tmp_path, "cut.tar.gz", data[: len(data) // 2])
    with pytest.raises(ArchiveError) as info:
        safe_extract(archive, "tar.gz", tmp_path / "out")
    assert info.value.kind == "archive" and info.value.message.startswith("cut.tar.gz ")
    assert "--archive" in (info.value.hint_for("command line") or "")


def test_garbage_zip_and_bad_crc_are_archive_errors(tmp_path, kit):
    with pytest.raises(ArchiveError):
        safe_extract(_write(tmp_path, "junk.zip", b"not a zip at all" * 10), "zip", tmp_path / "o1")
    good = bytearray(kit.zip_bytes([("file", "a.txt", b"hello world " * 100)]))
    path = _write(tmp_path, "crc.zip", bytes(good))
    with zipfile.ZipFile(path) as zf:
        offset = zf.infolist()[0].header_offset + 30 + len("a.txt")
    good[offset + 2] ^= 0xFF  # damage the compressed data
    _write(tmp_path, "crc.zip", bytes(good))
    with pytest.raises(ArchiveError):
        safe_extract(path, "zip", tmp_path / "o2")


def test_format_and_stem_from_names():
    assert archive_format("zluda-linux-abc.tar.gz") == "tar.gz"
    assert archive_format("ZLUDA-windows-rocm6-amd64.zip") == "zip"
    assert archive_stem("zluda-linux-abc.tar.gz") == "zluda-linux-abc"
    with pytest.raises(ArchiveError):
        archive_format("zluda.7z")


# --------------------------------------------------------------------------- archive bombs

_BOUNDED_EXTRACT = """
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_FSIZE, (32 << 20, 32 << 20))  # no file over 32 MiB may be written
resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
from zluda_runner.core.errors import UnsafeArchiveError
from zluda_runner.release.unpack import safe_extract
try:
    safe_extract(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
except UnsafeArchiveError as exc:
    print("REFUSED", exc.kind, exc.message)
else:
    print("EXTRACTED")
"""


def _deflated_zip(entries: list[tuple]) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for _kind, name, data in entries:
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_archive_bomb_is_refused_before_writing(tmp_path, kit, fmt):
    """80 MB of zeros packs into ~80 KB: far more than any release unpacks to relative to its size.
    Extracted in a child that may write no file over 32 MiB (RLIMIT_FSIZE): refused up front."""
    import subprocess
    import sys

    entries = [("file", "zluda/libcuda.so.1", b"\x7fELF" * 100), ("file", "zluda/bomb.bin", bytes(80 << 20))]
    data = kit.tar_gz(entries) if fmt == "tar.gz" else _deflated_zip(entries)
    assert len(data) < 1 << 20
    archive = _write(tmp_path, "bomb." + fmt, data)
    dest = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", _BOUNDED_EXTRACT, str(archive), fmt, str(dest)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, f"rc {done.returncode} (SIGXFSZ = -25): {done.stderr[-1500:]}"
    assert done.stdout.startswith("REFUSED unsafe-archive bomb." + fmt), done.stdout
    # refused for its size: over the bound a release of this archive's size may unpack to
    assert f" {unpacked_limit(len(data))} bytes" in done.stdout, done.stdout
    assert _tree(dest) == []  # nothing was written


def test_bomb_limits_leave_real_releases_alone(tmp_path, kit):
    """A release-sized archive of incompressible data unpacks: the bounds are relative to the archive."""
    entries = [("file", f"zluda/lib{i}.so", os.urandom(1 << 20)) for i in range(4)]
    archive = _write(tmp_path, "real.tar.gz", kit.tar_gz(entries))
    assert len(safe_extract(archive, "tar.gz", tmp_path / "out")) == 4
