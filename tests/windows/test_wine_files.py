"""Files in use, for real: a Windows process holds a DLL loaded while zluda-runner (installed from its
wheel into the official Windows CPython, under Wine) is asked to restore, place, reinstall or clean.

The holder is a second Windows ``python.exe`` that loads the DLL with ctypes, prints its pid and
waits on stdin (no timing: the test reads the line, then acts, then releases it). What Windows (Wine)
does to a loaded DLL is measured in :mod:`zluda_runner.core.winfiles`: it cannot be written or
deleted, but it and its folder can be renamed, so a plain ``shutil.rmtree`` half-deletes a release.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PureWindowsPath

import pytest

from tests.conftest import one_asset_manifest
from tests.windows.winpy import WinPython, winpath
from zluda_runner.core.replace import UNKNOWN_HOLDER_HINT

HOLD = ("import ctypes, os, sys\n"
        "held = ctypes.CDLL(sys.argv[1]) if sys.argv[2] == 'load' else open(sys.argv[1], 'rb')\n"
        "print('loaded', os.getpid(), flush=True)\n"
        "sys.stdin.read()\n")


def _start_holder(py: WinPython, dll: Path, how: str) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen([py.wine.exe, str(py.exe), "-c", HOLD, winpath(dll), how], cwd=py.home,
                            env=py.wine.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().split()


def _stop_holder(proc: subprocess.Popen[str]) -> str:
    """Close its stdin (the holder reads EOF and exits: the DLL is released); its stderr."""
    if proc.stdin is not None:
        proc.stdin.close()
    err = proc.stderr.read() if proc.stderr is not None else ""
    proc.wait(timeout=120)
    return err


@contextmanager
def holding(py: WinPython, dll: Path, how: str = "load") -> Iterator[int]:
    """A Windows python.exe with ``dll`` loaded (``how="open"``: open for reading, as a scanner or a
    copy holds it) until the block ends; its Windows pid.

    The holder is harness, not the code under test (plain CPython and ctypes): once in a CI run of
    the whole suite, Wine started it and it ended before printing (stdout empty). A holder that ends
    without a word is started once more; a second silent end fails with both exits and stderrs."""
    proc, line = _start_holder(py, dll, how)
    tries: list[str] = []
    while line[:1] != ["loaded"]:
        err = _stop_holder(proc)
        tries.append(f"stdout {line}, exit {proc.returncode}, stderr:\n{err}")
        if line or len(tries) == 2:  # it said something else, or ended silently twice
            pytest.fail(f"the holder did not load {dll}:\n" + "\n".join(tries))
        proc, line = _start_holder(py, dll, how)
    try:
        yield int(line[1])
    finally:
        _stop_holder(proc)


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (the journal's too) by relative path -> SHA-256."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(out: subprocess.CompletedProcess[str], held: Path, pid: int) -> None:
    """Exit 1 with the documented error (``--json``): file-in-use, the file and the process that holds
    it named in the error, that process in the hint (what to close), no traceback."""
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    error = json.loads(out.stdout)
    assert (error["kind"], error["exit_code"]) == ("file-in-use", 1), error
    assert winpath(held) in error["error"] and f"python.exe (pid {pid})" in error["error"], error
    assert f"python.exe (pid {pid})" in error["hint"], error


# a FileInUseError raised inside the Windows python, as data: its kind and the files it names
IN_USE_AS_JSON = ("except FileInUseError as exc:\n"
                  "    import json\n"
                  "    print(json.dumps({'kind': exc.kind, 'paths': list(exc.paths)}))\n")


@pytest.fixture
def zluda_dir(tmp_path: Path, standin) -> Path:
    root = tmp_path / "zluda"
    root.mkdir()
    shutil.copyfile(standin("zluda nvcuda", "DRIVER", "nvcuda.dll"), root / "nvcuda.dll")
    shutil.copyfile(standin("zluda cublas", "CUBLAS", "cublas64_12.dll"), root / "cublas64_12.dll")
    return root


def test_place_and_restore_refuse_while_a_dll_is_loaded_and_restore_is_exact_after(
    winpy: WinPython, windows_torch: Path, zluda_dir: Path, tmp_path: Path
) -> None:
    lib = windows_torch / "lib"
    nvidia = tree(lib)
    base = ["--zluda-dir", winpath(zluda_dir), "--cache-dir", winpath(tmp_path / "cache")]

    # place while an app has NVIDIA's cuBLAS loaded: refused, torch/lib untouched, no journal left
    with holding(winpy, lib / "cublas64_12.dll") as pid:
        out = winpy.zluda_run(*base, "--json", "place", "--torch-lib", winpath(lib))
        refused(out, lib / "cublas64_12.dll", pid)
        assert tree(lib) == nvidia and not (lib / ".zluda-runner").exists()

    out = winpy.zluda_run(*base, "place", "--torch-lib", winpath(lib))
    assert out.returncode == 0, out.stderr
    placed = tree(lib)
    assert placed["cublas64_12.dll"] == tree(zluda_dir)["cublas64_12.dll"]

    # restore while an app has the placed (ZLUDA) cuBLAS loaded: refused, every file as it was
    with holding(winpy, lib / "cublas64_12.dll") as pid:
        out = winpy.zluda_run("--json", "restore", "--torch-lib", winpath(lib))
        refused(out, lib / "cublas64_12.dll", pid)
        assert tree(lib) == placed  # torch/lib, the journal and the saved originals: byte for byte
        text = winpy.zluda_run("restore", "--torch-lib", winpath(lib))  # the same refusal, as text
        assert text.returncode == 1 and text.stderr.startswith("error: ") and "\nhint: " in text.stderr
        assert winpath(lib / "cublas64_12.dll") in text.stderr and f"(pid {pid})" in text.stderr
        assert winpy.zluda_run("status", "--torch-lib", winpath(lib)).returncode == 0  # still intact
        # an intact placement asked again writes nothing, so it is not refused
        assert winpy.zluda_run(*base, "place", "--torch-lib", winpath(lib)).returncode == 0

    out = winpy.zluda_run("restore", "--torch-lib", winpath(lib))
    assert out.returncode == 0, out.stderr
    assert tree(lib) == nvidia  # NVIDIA's files byte-identical; nothing of ours left


@pytest.fixture
def cached_release(winpy: WinPython, tmp_path: Path, standin) -> tuple[list[str], Path, Path]:
    """A Windows release installed into a cache the way users do it (`fetch --archive ZIP`, verified
    against the manifest's SHA-256): the manifest's upstream v6 Windows asset, a zip of stand-ins."""
    archive = tmp_path / "zluda-windows-test.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(standin("zluda nvcuda", "DRIVER", "nvcuda.dll"), "zluda/nvcuda.dll")
        zf.write(standin("zluda cublas", "CUBLAS", "cublas64_12.dll"), "zluda/cublas64_12.dll")
        zf.writestr("zluda/README.txt", "stand-ins\n")
    manifest = one_asset_manifest(tmp_path, archive.read_bytes(), archive.name, "windows")
    cache = tmp_path / "cache"
    base = ["--manifest", winpath(manifest), "--cache-dir", winpath(cache)]
    out = winpy.zluda_run(*base, "fetch", "v6", "--os", "windows", "--archive", winpath(archive))
    assert out.returncode == 0, out.stderr
    folder = cache / "releases" / "upstream-v6" / "zluda-windows-test" / "zluda"
    assert out.stdout.strip() == winpath(folder) and (folder / "nvcuda.dll").is_file()
    return [*base, "--archive", winpath(archive)], cache, folder


def cache_tree(cache: Path) -> dict[str, str]:
    """The releases and downloads of ``cache``, file by file (locks and tmp/ aside)."""
    return {f"{top}/{k}": v for top in ("releases", "downloads") for k, v in tree(cache / top).items()}


def listed(winpy: WinPython, base: list[str]) -> list[str]:
    out = winpy.zluda_run(*base, "--json", "cache", "list")
    assert out.returncode == 0, out.stderr
    return [e["release_id"] for e in json.loads(out.stdout)["releases"]]


def test_cache_clean_and_reinstall_refuse_while_a_release_dll_is_loaded(
    winpy: WinPython, cached_release: tuple[list[str], Path, Path]
) -> None:
    base, cache, folder = cached_release
    before = cache_tree(cache)
    with holding(winpy, folder / "nvcuda.dll") as pid:
        for args in (["cache", "clean", "v6"], ["cache", "clean"],
                     ["fetch", "v6", "--os", "windows", "--reinstall"]):
            out = winpy.zluda_run(*base, "--json", *args)
            refused(out, folder / "nvcuda.dll", pid)
            assert cache_tree(cache) == before, args  # the release whole: folder, marker, archive
            assert listed(winpy, base) == ["upstream-v6"]
        # and it is still a good release: a full check of every file passes
        out = winpy.zluda_run(*base, "--json", "fetch", "v6", "--os", "windows")
        assert out.returncode == 0 and json.loads(out.stdout)["action"] == "cached", out.stderr
        out = winpy.zluda_run(*base, "--json", "cache", "clean", "v6")
        assert out.returncode == 1 and json.loads(out.stdout)["exit_code"] == 1
    out = winpy.zluda_run(*base, "fetch", "v6", "--os", "windows", "--reinstall")
    assert out.returncode == 0, out.stderr
    out = winpy.zluda_run(*base, "cache", "clean", "v6")
    assert out.returncode == 0, out.stderr
    assert listed(winpy, base) == [] and not folder.exists()
    assert not (cache / "tmp").exists() or not any((cache / "tmp").iterdir())


def test_a_release_that_becomes_busy_mid_clean_is_gone_from_the_cache_never_half_there(
    winpy: WinPython, cached_release: tuple[list[str], Path, Path]
) -> None:
    """The race: the check passed (here: a check that answers "nothing in use", passed through the
    API's ``check`` parameter), then the delete meets a loaded DLL. Windows lets the folder be renamed
    aside, so the release is gone from the cache at once; only the held file is left, in tmp/, and the
    next clean deletes it once it is free."""
    base, cache, folder = cached_release
    clean = ("import sys\n"
             "from pathlib import Path\n"
             "from zluda_runner.core.errors import FileInUseError\n"
             "from zluda_runner.core.replace import no_locks\n"
             "from zluda_runner.release.cache import clean_cache\n"
             "try:\n"
             "    clean_cache(Path(sys.argv[1]), 'upstream-v6', check=no_locks)\n"
             + IN_USE_AS_JSON)
    with holding(winpy, folder / "nvcuda.dll"):
        out = winpy.run(["-c", clean, winpath(cache)])
        assert out.returncode == 0, out.stderr
        error = json.loads(out.stdout)
        assert error["kind"] == "file-in-use" and [PureWindowsPath(p).name for p in error["paths"]] == [
            "nvcuda.dll"], error
        assert listed(winpy, base) == []  # gone, not half there
        assert not (cache / "releases" / "upstream-v6").exists()
        left = [p.name for p in (cache / "tmp").rglob("*") if p.is_file()]
        assert left == ["nvcuda.dll"]  # everything else deleted
    out = winpy.zluda_run(*base, "cache", "clean", "v6")
    assert out.returncode == 0, out.stderr
    assert not any((cache / "tmp").rglob("*"))


def test_a_file_held_open_not_loaded_is_refused_too_and_the_hint_says_what_to_close(
    winpy: WinPython, cached_release: tuple[list[str], Path, Path]
) -> None:
    """A file open without delete sharing (Python's own open(), a scanner, a copy in progress) blocks a
    delete as a loaded DLL does. Only loaded modules can be traced to a process where the Restart
    Manager cannot answer (Wine's is a stub): then the hint says what to close."""
    base, cache, _folder = cached_release
    archive = cache / "downloads" / "upstream-v6" / "zluda-windows-test.zip"
    before = cache_tree(cache)
    with holding(winpy, archive, how="open") as pid:
        out = winpy.zluda_run(*base, "--json", "cache", "clean", "v6")
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
        error = json.loads(out.stdout)
        assert (error["kind"], error["exit_code"]) == ("file-in-use", 1), error
        assert winpath(archive) in error["error"], error
        # the holder, where Windows could name it; else the hint saying what to close
        assert f"python.exe (pid {pid})" in error["hint"] or error["hint"] == UNKNOWN_HOLDER_HINT, error
        assert cache_tree(cache) == before and listed(winpy, base) == ["upstream-v6"]
    assert winpy.zluda_run(*base, "cache", "clean", "v6").returncode == 0


def test_a_dll_loaded_after_the_check_stops_restore_with_the_journal_kept_and_the_next_restore_is_exact(
    winpy: WinPython, windows_torch: Path, zluda_dir: Path, tmp_path: Path
) -> None:
    """The race on restore: the check passed (a check answering "nothing in use", given through the
    API's ``check`` parameter), then a file is found loaded. What was put back stays put back, the
    journal and the saved originals are kept, and the next `restore` finishes exactly."""
    lib = windows_torch / "lib"
    nvidia = tree(lib)
    base = ["--zluda-dir", winpath(zluda_dir), "--cache-dir", winpath(tmp_path / "cache")]
    assert winpy.zluda_run(*base, "place", "--torch-lib", winpath(lib)).returncode == 0
    entries = json.loads((lib / ".zluda-runner" / "journal.json").read_text())["entries"]
    last = entries[0]["name"]  # restore goes last placed first: this one is put back last
    restore = ("import sys\n"
               "from pathlib import Path\n"
               "from zluda_runner.core.errors import FileInUseError\n"
               "from zluda_runner.core.replace import no_locks\n"
               "from zluda_runner.launch.windows.restoring import restore\n"
               "try:\n"
               "    restore(Path(sys.argv[1]), check=no_locks)\n"
               + IN_USE_AS_JSON)
    with holding(winpy, lib / last):
        out = winpy.run(["-c", restore, winpath(lib)])
        assert out.returncode == 0, out.stderr
        error = json.loads(out.stdout)
        assert error["kind"] == "file-in-use" and error["paths"] == [winpath(lib / last)], error
        # every other file is already put back (restore goes last placed first)
        assert all(tree(lib).get(name) == sha for name, sha in nvidia.items() if name != last)
        assert (lib / ".zluda-runner" / "journal.json").is_file()
    out = winpy.zluda_run("restore", "--torch-lib", winpath(lib))
    assert out.returncode == 0, out.stderr
    assert tree(lib) == nvidia
