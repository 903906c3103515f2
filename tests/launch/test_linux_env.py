"""compose_env, prepare_link_dir and the redirect map: pure file/env work."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from zluda_runner.core.errors import CacheError, LaunchError
from zluda_runner.launch.linux import LinuxLaunch, compose_env, prepare_link_dir
from zluda_runner.launch.redirect import MAP_ENV, write_redirect_map


def _components(value: str, seps: str = ":") -> list[str]:
    parts = [value]
    for sep in seps:
        parts = [p for part in parts for p in part.split(sep)]
    return parts


def test_ours_first_users_after_no_empty_components(tmp_path: Path) -> None:
    base = {
        "PATH": "/usr/bin",
        "LD_LIBRARY_PATH": ":/user/lib::/other;/semi:",
        "LD_PRELOAD": " libuser.so:/x/libother.so ",
        "LD_AUDIT": "/user/audit.so:",
    }
    launch = LinuxLaunch(
        link_dir=tmp_path / "links",
        ld_library_path=["/release/lib"],
        ld_preload=["libcuda.so.1"],
        ld_audit=["/cache/redirect.so"],
        env={"ZLUDA_NVRTC_LIB": "/x/nvrtc.so", "DISABLE_ADDMM_CUDA_LT": "1"},
    )
    env = compose_env(base, launch)
    # the user's empty components are the current folder to ld.so: kept, as ./ (issue 20, adversarial 19)
    assert env["LD_LIBRARY_PATH"] == f"{tmp_path / 'links'}:/release/lib:./:/user/lib:/other:/semi"
    assert env["LD_PRELOAD"] == "libcuda.so.1:libuser.so:/x/libother.so"
    assert env["LD_AUDIT"] == "/cache/redirect.so:/user/audit.so"
    assert env["ZLUDA_NVRTC_LIB"] == "/x/nvrtc.so"
    assert env["DISABLE_ADDMM_CUDA_LT"] == "1"
    assert env["PATH"] == "/usr/bin"
    for name in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT"):
        assert "" not in _components(env[name], ":;"), name
    assert base["LD_AUDIT"] == "/user/audit.so:"  # input untouched


def test_nothing_planned_leaves_no_empty_variable() -> None:
    env = compose_env({"LD_LIBRARY_PATH": "", "PATH": "/bin"}, LinuxLaunch())
    assert "LD_LIBRARY_PATH" not in env  # an empty variable is no search path to ld.so either
    assert compose_env({"LD_LIBRARY_PATH": "::"}, LinuxLaunch())["LD_LIBRARY_PATH"] == "./"
    assert "LD_PRELOAD" not in env and "LD_AUDIT" not in env


def test_nested_launch_does_not_repeat_entries(tmp_path: Path) -> None:
    launch = LinuxLaunch(link_dir=tmp_path, ld_audit=["/a.so"])
    once = compose_env({}, launch)
    twice = compose_env(once, launch)
    assert twice["LD_LIBRARY_PATH"] == str(tmp_path)
    assert twice["LD_AUDIT"] == "/a.so"


def test_path_with_colon_cannot_be_expressed() -> None:
    with pytest.raises(LaunchError) as info:
        compose_env({}, LinuxLaunch(ld_library_path=["/weird:dir"]))
    assert info.value.hint


def test_launch_json_round_trip(tmp_path: Path) -> None:
    launch = LinuxLaunch(link_dir=tmp_path, ld_preload=["libcublas.so.13"], env={"A": "1"})
    assert LinuxLaunch.from_json(launch.to_json()) == launch


def test_link_dir_is_made_once_and_named_right(tmp_path: Path) -> None:
    release = tmp_path / "release"
    release.mkdir()
    (release / "libcuda.so").write_bytes(b"driver")
    (release / "libcublas.so").write_bytes(b"blas")
    mapping = {"libcuda.so.1": release / "libcuda.so", "libcublas.so.13": release / "libcublas.so"}
    cache = tmp_path / "cache"
    first = prepare_link_dir(cache, mapping)
    assert sorted(os.listdir(first)) == ["libcublas.so.13", "libcuda.so.1"]
    assert (first / "libcuda.so.1").read_bytes() == b"driver"
    assert os.readlink(first / "libcublas.so.13") == str(release / "libcublas.so")
    inode = first.stat().st_ino
    again = prepare_link_dir(cache, dict(reversed(mapping.items())))
    assert again == first and again.stat().st_ino == inode  # reused, not rebuilt
    other = prepare_link_dir(cache, {"libcuda.so.1": release / "libcuda.so"})
    assert other != first
    assert [p.name for p in (cache / "links").iterdir() if p.name.startswith(".")] == []  # no temp left


def test_link_dir_broken_by_hand_is_rebuilt(tmp_path: Path) -> None:
    lib = tmp_path / "libcuda.so"
    lib.write_bytes(b"x")
    folder = prepare_link_dir(tmp_path / "cache", {"libcuda.so.1": lib})
    (folder / "libcuda.so.1").unlink()
    assert prepare_link_dir(tmp_path / "cache", {"libcuda.so.1": lib}) == folder
    assert (folder / "libcuda.so.1").read_bytes() == b"x"


def test_link_dir_refuses_missing_files_and_bad_names(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="missing"):
        prepare_link_dir(tmp_path, {"libcuda.so.1": tmp_path / "nope.so"})
    (tmp_path / "ok.so").write_bytes(b"")
    with pytest.raises(LaunchError, match=r": '\.\./evil\.so'\n"):
        prepare_link_dir(tmp_path, {"../evil.so": tmp_path / "ok.so"})


def test_redirect_map_is_content_keyed(tmp_path: Path) -> None:
    mapping = {"libcublas.so.13": tmp_path / "b.so", "libcuda.so.1": tmp_path / "c.so"}
    path = write_redirect_map(tmp_path, mapping)
    lines = path.read_text().splitlines()
    assert lines == [f"libcublas.so.13\t{tmp_path / 'b.so'}", f"libcuda.so.1\t{tmp_path / 'c.so'}"]
    assert write_redirect_map(tmp_path, dict(reversed(mapping.items()))) == path
    assert write_redirect_map(tmp_path, {"libcuda.so.1": tmp_path / "c.so"}) != path
    assert MAP_ENV == "ZLUDA_RUNNER_REDIRECT_MAP"


def test_an_empty_ld_library_path_entry_still_finds_the_current_folder(cc_build, tmp_path: Path) -> None:
    """glibc's ld.so searches the current folder for an empty LD_LIBRARY_PATH component: a workload
    that relies on one still finds its library under zluda-run (it was dropped: exit 127 on 5c673db)."""
    import subprocess

    src = tmp_path / "here.c"
    src.write_text("int here(void) { return 7; }\n")
    app_src = tmp_path / "app.c"
    app_src.write_text("int here(void);\nint main(void) { return here(); }\n")
    lib = cc_build([src], "libhere20.so", args=["-Wl,-soname,libhere20.so"])
    app = cc_build([app_src, lib], "app_here20", shared=False)
    work = tmp_path / "work"
    work.mkdir()
    (work / "libhere20.so").write_bytes(lib.read_bytes())
    base = {"PATH": os.environ.get("PATH", "/usr/bin"), "LD_LIBRARY_PATH": "/nowhere:"}
    assert subprocess.run([str(app)], cwd=work, env=base, check=False).returncode == 7  # ld.so's own rule
    env = compose_env(base, LinuxLaunch(link_dir=tmp_path / "links"))
    assert subprocess.run([str(app)], cwd=work, env=env, check=False).returncode == 7, env["LD_LIBRARY_PATH"]


def test_a_cache_where_no_link_folder_can_be_made_is_a_cache_error(tmp_path: Path) -> None:
    """`zluda-run -- CMD` on a read-only (or full) cache ended in a PermissionError traceback from
    making <cache>/links; here links/ is a file, which stops root too."""
    lib = tmp_path / "libcuda.so"
    lib.write_bytes(b"\x7fELF")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "links").write_text("not a folder")
    with pytest.raises(CacheError) as caught:
        prepare_link_dir(cache, {"libcuda.so.1": lib})
    assert caught.value.message.startswith(f"cannot make the launch's library links in {cache / 'links'}: ")
    assert caught.value.hint == ("make the cache folder writable, or give another one with "
                                 "Options(cache_dir=...)")
    assert (cache / "links").read_text() == "not a folder"
