"""warmup --clear-caches: ZLUDA's compile cache (zluda*.db*, v6+ ``zluda2.db``: vosen/ZLUDA
zluda_cache/src/lib.rs@a7bf2ba2) and MIOpen's user caches (~/.cache/miopen, ~/.config/miopen on Linux;
%USERPROFILE%\\.miopen\\cache on Windows) are removed, each file listed; nothing else, never a link, nothing
inside a cache folder that is a link, nothing in a root or home folder named by a variable."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from tests.golden import assert_golden
from zluda_runner.core.errors import HostError
from zluda_runner.host.compile_cache import clear_caches, miopen_cache_dirs
from zluda_runner.launch.warmup import warmup
from zluda_runner.report.compile_cache_view import render_cleared as render_cleared_text
from zluda_runner.report.warmup_view import render_warmup as render_text


def _put(path: Path, size: int = 100) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def _linux_home(home: Path) -> dict[str, Path]:
    cache = home / ".cache"
    return {
        "zluda2": _put(cache / "zluda" / "ComputeCache" / "zluda2.db", 4000),
        "wal": _put(cache / "zluda" / "ComputeCache" / "zluda.db-wal", 10),
        "fork": _put(cache / "ZLUDA" / "ComputeCache" / "zluda.db", 20),
        "zluda_other": _put(cache / "zluda" / "ComputeCache" / "notes.txt"),
        "kernels": _put(cache / "miopen" / "3.4.1.76e3cde91" / "gfx1100_48.ukdb", 300),
        "miopen_other": _put(cache / "miopen" / "3.4.1.76e3cde91" / "readme.txt"),
        "perf": _put(home / ".config" / "miopen" / "gfx1100_48.HIP.3_4_1.udb", 50),
        "find": _put(home / ".config" / "miopen" / "gfx1100_48.HIP.3_4_1.ufdb.txt", 7),
        "elsewhere": _put(cache / "pip" / "gfx1100_48.ukdb"),  # a MIOpen-like name outside MIOpen's folders
    }


def test_clear_removes_only_zluda_and_miopen_cache_files(tmp_path: Path) -> None:
    home = tmp_path / "home"
    files = _linux_home(home)
    result = clear_caches("linux", {}, home)
    removed = {f.path for f in result.removed}
    assert removed == {files[k] for k in ("zluda2", "wal", "fork", "kernels", "perf", "find")}
    assert result.freed_bytes == 4000 + 10 + 20 + 300 + 50 + 7 and result.skipped == result.failed == ()
    for kept in ("zluda_other", "miopen_other", "elsewhere"):
        assert files[kept].exists()
    assert (home / ".cache" / "miopen" / "3.4.1.76e3cde91").is_dir()  # folders stay
    assert_golden("warmup_cleared", render_cleared_text(result) + "\n", tmp=tmp_path)  # each file, the sum
    assert clear_caches("linux", {}, home).removed == ()  # nothing left to clear


def test_links_are_never_followed_or_removed(tmp_path: Path) -> None:
    home, outside = tmp_path / "home", tmp_path / "outside"
    precious = _put(outside / "gfx1100_48.udb")
    target = _put(outside / "kernels" / "gfx1100_48.ukdb")
    (home / ".config").mkdir(parents=True)
    (home / ".config" / "miopen").symlink_to(outside)  # a cache folder that is a link
    (home / ".cache" / "miopen").mkdir(parents=True)
    (home / ".cache" / "miopen" / "gfx1030_36.ukdb").symlink_to(target)  # a file that is a link
    (home / ".cache" / "miopen" / "sub").symlink_to(outside / "kernels", target_is_directory=True)
    (home / ".cache" / "zluda").mkdir()
    (home / ".cache" / "zluda" / "ComputeCache").symlink_to(outside, target_is_directory=True)
    _put(outside / "zluda.db")
    result = clear_caches("linux", {}, home)
    assert result.removed == ()
    assert precious.exists() and target.exists() and (outside / "zluda.db").exists()
    assert (home / ".cache" / "miopen" / "gfx1030_36.ukdb").is_symlink()
    assert_golden("warmup_clear_links_skipped", "\n".join(result.skipped) + "\n", tmp=tmp_path)


def test_variables_naming_a_root_or_the_home_folder_are_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stray = _put(home / "gfx1100_48.udb")
    env = {"MIOPEN_USER_DB_PATH": str(home), "MIOPEN_CUSTOM_CACHE_DIR": "/"}
    assert [d for d, _ in miopen_cache_dirs("linux", env, home)][:2] == [Path("/"), home]
    result = clear_caches("linux", env, home, zluda=False)
    assert stray.exists() and result.removed == ()
    assert_golden("warmup_clear_roots_skipped", "\n".join(result.skipped) + "\n", tmp=tmp_path)
    moved = _put(tmp_path / "mycache" / "miopen" / "gfx1100_48.ukdb")
    env = {"MIOPEN_CUSTOM_CACHE_DIR": str(tmp_path / "mycache" / "miopen")}
    assert [f.path for f in clear_caches("linux", env, home, zluda=False).removed] == [moved]


def test_windows_locations(tmp_path: Path) -> None:
    profile = tmp_path / "Users" / "u"
    env = {"LOCALAPPDATA": str(profile / "AppData" / "Local"), "USERPROFILE": str(profile)}
    # Windows folds case: one folder serves ZLUDA and zluda
    db = _put(profile / "AppData" / "Local" / "ZLUDA" / "ComputeCache" / "zluda2.db")
    ukdb = _put(profile / ".miopen" / "cache" / "3.4.1.76e3cde91" / "gfx1201_32.ukdb")
    removed = {f.path for f in clear_caches("win32", env, profile).removed}
    assert removed == {db, ukdb}


def test_warmup_clears_first_when_asked(tmp_path: Path) -> None:
    home = tmp_path / "home"
    files = _linux_home(home)
    cache = home / ".cache" / "zluda" / "ComputeCache"
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    kept = warmup([sys.executable, "-c", "pass"], env, [cache], home=home)
    assert kept.cleared is None and files["zluda2"].exists() and kept.bytes_before == 4010
    report = warmup([sys.executable, "-c", "pass"], env, [cache], clear=True, home=home)
    assert report.cleared is not None and len(report.cleared.removed) == 6
    assert report.bytes_before == 0 and not files["kernels"].exists()  # cleared before the run
    assert report.to_dict()["cleared"]["removed"][0]["path"]
    text = render_text(dataclasses.replace(report, elapsed_s=1.5), "python") + "\n"  # its time fixed
    assert_golden("launch-warmup-cleared-first", text, tmp=tmp_path)  # what was cleared, then the run


def test_warmup_refused_clears_nothing(tmp_path: Path) -> None:
    """A warmup that cannot run (no command, a heartbeat that is not positive) is refused before any
    cache is removed."""
    home = tmp_path / "home"
    files = _linux_home(home)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    with pytest.raises(HostError) as info:
        warmup([], env, [], clear=True, home=home)
    assert info.value.kind == "host"
    assert "warmup -- python infer.py" in (info.value.hint_for("command line") or "")  # the fix
    with pytest.raises(HostError, match="heartbeat"):
        warmup([sys.executable, "-c", "pass"], env, [], clear=True, home=home, heartbeat_s=0)
    assert all(f.exists() for f in files.values())
