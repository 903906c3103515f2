"""Member names an archive cannot be unpacked with everywhere: too long for a file system, or two names
only the case tells apart. Refused before anything is written, with a bounded message naming the
member(s) and a hint that the archive is not a usable release; a fetch leaves nothing in the cache."""

from __future__ import annotations

import copy
import errno
import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.core.errors import ArchiveError, UnsafeArchiveError
from zluda_runner.core.wording import render
from zluda_runner.release.manifest import default_manifest_path
from zluda_runner.release.names import MAX_NAME_PART, UNUSABLE_HINT, UnusableArchiveError, shown
from zluda_runner.release.unpack import safe_extract


def _extract(tmp_path: Path, kit, fmt: str, entries: list[tuple]) -> tuple[pytest.ExceptionInfo, Path]:
    data = kit.tar_gz(entries) if fmt == "tar.gz" else kit.zip_bytes(entries)
    archive = tmp_path / f"z.{fmt}"
    archive.write_bytes(data)
    dest = tmp_path / "out"
    with pytest.raises((ArchiveError, UnsafeArchiveError)) as info:
        safe_extract(archive, fmt, dest)
    return info, dest


def _nothing_written(dest: Path) -> bool:
    return not dest.exists() or not any(dest.rglob("*"))


LONG_PART = "a" * (MAX_NAME_PART + 1) + ".dll"


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
@pytest.mark.parametrize(("name", "needle"), [
    (f"zluda/{LONG_PART}", f" {MAX_NAME_PART + 5} bytes"),  # the size of the part, of the name, its depth
    ("zluda/" + "/".join(["d" * 200] * 8) + "/x.dll", " 1619 bytes"),
    ("zluda/" + "d/" * 40 + "x.dll", " 42 folders"),
])
def test_a_name_no_file_system_takes_is_refused_before_writing(tmp_path, kit, fmt, name, needle):
    info, dest = _extract(tmp_path, kit, fmt, [("file", "zluda/nvcuda.dll", b"MZ"), ("file", name, b"x")])
    exc = info.value
    assert isinstance(exc, UnusableArchiveError)
    assert exc.kind == "unusable-archive" and needle in exc.message
    assert len(exc.message) < 400
    if len(name) > 100:  # shortened, its start and end kept
        assert name not in exc.message and f"({len(name)} characters)" in exc.message
        assert f"'{name[:20]}" in exc.message and f"{name[-20:]}'" in exc.message
    assert "--release VERSION" in (exc.hint_for("command line") or "")  # the way on: another release
    assert _nothing_written(dest)


def test_names_real_releases_have_pass(tmp_path, kit):
    deep = "zluda/" + "d/" * 20 + "x.dll"
    archive = tmp_path / "ok.zip"
    archive.write_bytes(kit.zip_bytes([("file", "zluda/" + "b" * MAX_NAME_PART, b"1"), ("file", deep, b"2"),
                                       ("file", "zluda/nvcuda.dll", b"3"),
                                       ("file", "zluda/nvcuda.dll.bak", b"4")]))
    names = safe_extract(archive, "zip", tmp_path / "out")
    assert len(names) == 4 and (tmp_path / "out" / deep).read_bytes() == b"2"


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_names_that_differ_only_by_case_are_refused_on_every_os(tmp_path, kit, fmt):
    info, dest = _extract(tmp_path, kit, fmt, [("file", "zluda/nvcuda.dll", b"ZLUDA's"),
                                                ("file", "zluda/NVCUDA.dll", b"another")])
    exc = info.value
    assert isinstance(exc, UnusableArchiveError)
    assert exc.kind == "unusable-archive" and "Windows" in exc.message  # where it would not unpack the same
    assert "'zluda/nvcuda.dll'" in exc.message and "'zluda/NVCUDA.dll'" in exc.message
    assert _nothing_written(dest)


def test_folders_that_differ_only_by_case_are_refused_naming_both_members(tmp_path, kit):
    info, dest = _extract(tmp_path, kit, "zip", [("file", "ZLUDA/nvcuda.dll", b"1"),
                                                  ("file", "zluda/zluda.exe", b"2")])
    assert ("the members 'ZLUDA/nvcuda.dll' and 'zluda/zluda.exe' lie in the folders 'ZLUDA' and 'zluda'"
            in info.value.message)
    assert _nothing_written(dest)


def test_a_folder_entry_and_its_files_in_one_case_pass(tmp_path, kit):
    archive = tmp_path / "ok.tar.gz"
    archive.write_bytes(kit.tar_gz([("dir", "ZLUDA"), ("file", "ZLUDA/nvcuda.dll", b"1"), ("dir", "ZLUDA"),
                                    ("file", "ZLUDA/trace/nvcuda.dll", b"2")]))
    assert len(safe_extract(archive, "tar.gz", tmp_path / "out")) == 4


def test_an_unsafe_members_message_is_bounded_too(tmp_path, kit):
    name = "x/" * 600 + "../evil.txt"
    info, dest = _extract(tmp_path, kit, "tar.gz", [("file", name, b"x")])
    assert isinstance(info.value, UnsafeArchiveError) and len(info.value.message) < 400
    assert "'..'" in info.value.message and _nothing_written(dest)


def test_shown_keeps_short_text_and_bounds_long():
    assert shown("zluda/nvcuda.dll") == "zluda/nvcuda.dll"
    long = "p" * 500 + "/name.dll"
    out = shown(long)
    assert len(out) < 140 and out.startswith("ppp") and "name.dll (509 characters)" in out


# --------------------------------------------------------------------------- through fetch


@pytest.fixture
def fetch(tmp_path, kit):
    def run(entries: list[tuple], cache: Path, fmt: str = "zip", *extra: str):
        packaged = json.loads(default_manifest_path().read_text())
        rel = copy.deepcopy(next(r for r in packaged["releases"] if r["id"] == "upstream-v6"))
        os_name = "windows" if fmt == "zip" else "linux"
        asset = copy.deepcopy(next(a for a in rel["assets"] if a["os"] == os_name))
        archive = tmp_path / f"zluda-test.{fmt}"
        archive.write_bytes(kit.zip_bytes(entries) if fmt == "zip" else kit.tar_gz(entries))
        asset.update(name=archive.name, url=f"https://example.invalid/{archive.name}",
                     sha256=kit.sha256(archive.read_bytes()), size=archive.stat().st_size)
        rel["assets"] = [asset]
        manifest = tmp_path / "manifest.json"
        manifest.write_text(json.dumps({**packaged, "releases": [rel]}))
        return CliRunner().invoke(main_group, ["--manifest", str(manifest), "--cache-dir", str(cache), *extra,
                                               "fetch", "v6", "--os", os_name, "--archive", str(archive)],
                                  catch_exceptions=False)
    return run


def _cache_holds_nothing(cache: Path) -> bool:
    kept = [p for p in cache.rglob("*") if p.is_file() and p.parent.name != "locks"]
    return kept == [] and not any((cache / "releases").rglob("*")) and not any((cache / "tmp").iterdir())


def test_fetch_of_a_case_colliding_zip_caches_nothing(fetch, tmp_path):
    cache = tmp_path / "cache"
    entries = [("file", "zluda/nvcuda.dll", b"1"), ("file", "zluda/NVCUDA.dll", b"2")]
    res = fetch(entries, cache, "zip", "--json")
    assert res.exit_code == 1 and "Traceback" not in res.output
    data = json.loads(res.stdout)
    assert data["kind"] == "unusable-archive" and "zluda/NVCUDA.dll" in data["error"]
    # the archive is as published: the unusable-archive hint (report it, pick another release), no retry
    assert data["hint"] == render(UNUSABLE_HINT, "command line")
    assert _cache_holds_nothing(cache)


def test_fetch_of_a_long_name_caches_nothing_and_says_so_briefly(fetch, tmp_path):
    cache = tmp_path / "cache"
    res = fetch([("file", "zluda/libcuda.so.1", b"1"), ("file", f"zluda/{LONG_PART}", b"2")], cache, "tar.gz")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert len(res.stderr) < 900 and LONG_PART not in res.stderr, res.stderr
    assert f" {MAX_NAME_PART + 5} bytes" in res.stderr and "--release VERSION" in res.stderr
    assert _cache_holds_nothing(cache)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's PATH_MAX (4096) is what is hit")
def test_a_path_too_long_for_the_file_system_where_the_cache_is(fetch, tmp_path):
    """Every name fits (parts under 255 bytes, 800 bytes in all), but the cache folder is 3,400 bytes
    deep: the kernel refuses the path (ENAMETOOLONG). The message names the member, shortened; the hint
    says to move the cache somewhere shorter."""
    cache = tmp_path.joinpath(*["c" * 200] * 17)
    cache.mkdir(parents=True)
    name = "zluda/" + "/".join(["n" * 190] * 4) + "/libcuda.so.1"
    res = fetch([("file", "zluda/libcuda.so", b"1"), ("file", name, b"2")], cache, "tar.gz")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert os.strerror(errno.ENAMETOOLONG) in res.stderr, res.stderr  # the kernel's word
    assert len(res.stderr) < 1200, res.stderr
    assert "--cache-dir" in res.stderr  # the fix: a cache at a shorter path
    assert _cache_holds_nothing(cache)


def test_a_corrupt_members_long_name_is_bounded_in_the_message(tmp_path, kit):
    import zipfile

    name = "/".join(["n" * 200] * 4) + "/a.txt"  # fits every limit, 800+ characters
    path = tmp_path / "crc.zip"
    good = bytearray(kit.zip_bytes([("file", name, b"hello world " * 100)]))
    path.write_bytes(bytes(good))
    with zipfile.ZipFile(path) as zf:
        offset = zf.infolist()[0].header_offset + 30 + len(name)
    good[offset + 2] ^= 0xFF  # damage the compressed data: zipfile's error quotes the whole name
    path.write_bytes(bytes(good))
    with pytest.raises(ArchiveError) as info:
        safe_extract(path, "zip", tmp_path / "out")
    assert info.value.kind == "archive" and name not in info.value.message and len(info.value.message) < 400


def test_a_link_target_too_long_is_refused_before_writing(tmp_path, kit):
    target = "/".join(["t" * 200] * 6)
    info, dest = _extract(tmp_path, kit, "tar.gz", [("file", "zluda/libcuda.so.1", b"1"),
                                                     ("symlink", "zluda/libcuda.so", target)])
    assert isinstance(info.value, UnusableArchiveError)
    assert " 1205 bytes" in info.value.message and len(info.value.message) < 300  # the target's size
    assert _nothing_written(dest)


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
@pytest.mark.parametrize(("name", "needle"), [
    ("zluda/nvcuda.dll:evil", "':'"),  # on NTFS: a stream written into nvcuda.dll
    ("zluda/what?.dll", "'?'"),
    ("zluda/tab\there.dll", "'\\t'"),
    ("zluda/cublas.dll.", "'zluda/cublas.dll.'"),  # Windows strips it: one file with cublas.dll
    ("zluda/lib /x.dll", "'zluda/lib /x.dll'"),
    ("zluda/NUL", "a device (NUL)"),
    ("zluda/aux.dll", "a device (AUX)"),
    ("zluda/com1/x.dll", "a device (COM1)"),
    ("zluda/lpt\u00b9.txt", "a device (LPT\u00b9)"),
    # learn.microsoft.com "Naming a file" lists COM0 and LPT0 too; CONIN$/CONOUT$ are the console's
    ("zluda/COM0", "a device (COM0)"),
    ("zluda/lpt0.dll", "a device (LPT0)"),
    ("zluda/conin$", "a device (CONIN$)"),
    ("zluda/CONOUT$.log", "a device (CONOUT$)"),
])
def test_a_name_windows_cannot_create_is_refused_on_every_os(tmp_path, kit, fmt, name, needle):
    """learn.microsoft.com/windows/win32/fileio/naming-a-file ("Naming Conventions"): such a member
    would be written elsewhere, merged or refused on Windows, so the release would not unpack the same."""
    info, dest = _extract(tmp_path, kit, fmt, [("file", "zluda/nvcuda.dll", b"MZ"), ("file", name, b"x")])
    exc = info.value
    assert isinstance(exc, UnusableArchiveError), exc
    assert exc.kind == "unusable-archive" and needle in exc.message and "Windows" in exc.message
    assert _nothing_written(dest)


def test_names_that_only_look_like_devices_pass(tmp_path, kit):
    archive = tmp_path / "ok.zip"
    names = ["zluda/console.dll", "zluda/auxv", "zluda/lpt10.dll", "zluda/com.dll", "zluda/conin.dll",
             "zluda/nul_check.so", "zluda/a.b.c"]
    archive.write_bytes(kit.zip_bytes([("file", n, b"1") for n in names]))
    safe_extract(archive, "zip", tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out" / "zluda").iterdir()) == sorted(n[6:] for n in names)
