"""Unpacking a release where Windows unpacks it: zluda-runner from its wheel in the official Windows
CPython, under Wine (whose file system is case-insensitive, as NTFS is).

The fault it guards against, measured first: a zip holding ``nvcuda.dll`` and ``NVCUDA.dll`` unpacks
on Windows into one file, the second silently overwriting the first. zluda-runner refuses such an
archive before anything is written, naming both members, on Windows as on Linux.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tests.conftest import one_asset_manifest
from tests.windows.winpy import WinPython, winpath
from zluda_runner.core.wording import render
from zluda_runner.release.names import UNUSABLE_HINT as _UNUSABLE_HINT

MEMBERS = {"zluda/nvcuda.dll": b"MZ ZLUDA's driver", "zluda/NVCUDA.dll": b"MZ another file"}


def _zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in MEMBERS.items():
            zf.writestr(name, data)
    return path


def test_windows_keeps_one_of_two_names_that_differ_only_by_case(winpy: WinPython, tmp_path: Path) -> None:
    """The ground truth: Windows' own zipfile.extractall leaves one file where the archive has two."""
    archive = _zip(tmp_path / "case.zip")
    out = tmp_path / "plain"
    script = "import sys, zipfile\nzipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])\n"
    done = winpy.run(["-c", script, winpath(archive), winpath(out)])
    assert done.returncode == 0, done.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].read_bytes() == MEMBERS["zluda/NVCUDA.dll"]  # the first is lost


def test_fetch_refuses_a_zip_whose_names_differ_only_by_case(winpy: WinPython, tmp_path: Path) -> None:
    archive = _zip(tmp_path / "zluda-windows-test.zip")
    manifest = one_asset_manifest(tmp_path, archive.read_bytes(), archive.name, "windows")
    cache = tmp_path / "cache"
    base = ["--manifest", winpath(manifest), "--cache-dir", winpath(cache)]
    out = winpy.zluda_run(*base, "--json", "fetch", "v6", "--os", "windows", "--archive", winpath(archive))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    error = json.loads(out.stdout)
    assert (error["kind"], error["exit_code"]) == ("unusable-archive", 1), error
    assert all(repr(name) in error["error"] for name in MEMBERS), error  # both members named
    assert error["hint"] == render(_UNUSABLE_HINT, "command line"), error  # pick another release
    assert not (cache / "releases").exists() or not any((cache / "releases").rglob("*"))
    assert not any(p.is_file() for p in (cache / "tmp").rglob("*"))
    assert not any(p.is_file() for p in (cache / "downloads").rglob("*"))


def test_a_cache_folder_that_is_a_file_is_named_on_windows(winpy: WinPython, tmp_path: Path) -> None:
    """Windows answers a path under a file with 'path not found', not ENOTDIR: the same one error."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    for cache, named in ((blocker, f"The cache folder {winpath(blocker)} is a file"),
                         (blocker / "cache", f"cannot be made: {winpath(blocker)} is a file")):
        for args in (("cache", "list"), ("fetch", "v6", "--os", "windows")):
            out = winpy.zluda_run("--cache-dir", winpath(cache), "--json", *args)
            assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
            error = json.loads(out.stdout)
            assert named in error["error"] and "--cache-dir" in error["hint"], error
    assert blocker.read_text() == "a file"
