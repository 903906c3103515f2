"""Files in use (Windows: a DLL of a cached release loaded by a running app) make `cache clean` and a
reinstall refuse whole, before anything changes; a release is in the cache whole or not at all.

On Linux nothing locks a file, so the platform's check is injected (the ``check`` parameter of the
library calls); what Windows really does is tested under Wine in tests/windows/test_wine_files.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden import assert_golden
from zluda_runner.core.errors import FileInUseError
from zluda_runner.core.exitcodes import ERROR
from zluda_runner.core.replace import IN_USE, InUse, in_use_error, platform_check, remove_tree_whole
from zluda_runner.release.cache import clean_cache, ensure_release, list_cache

FILES = [
    ("file", "zluda/nvcuda.dll", b"MZ driver" * 100),
    ("file", "zluda/cublas64_12.dll", b"MZ cublas" * 50),
    ("file", "zluda/nvml.dll", b"MZ nvml"),
]


class Holder:
    """An injected in-use check holding the files named ``names``; what it was asked, and whether the
    release folder was still in its place each time (the check must come first)."""

    def __init__(self, watch: Path, *names: str) -> None:
        self.watch, self.names = watch, set(names)
        self.asked: list[str] = []
        self.in_place: list[bool] = []

    def __call__(self, paths):  # type: ignore[no-untyped-def]
        self.asked.extend(p.name for p in paths)
        self.in_place.append(self.watch.is_dir())
        return [InUse(str(p), IN_USE, ("ComfyUI.exe (pid 4242)",)) for p in paths if p.name in self.names]


@pytest.fixture
def cached(tmp_path: Path, kit):  # type: ignore[no-untyped-def]
    """Two releases installed from hand-downloaded zips; (cache, release, asset, archive, folder)."""
    cache = tmp_path / "cache"
    out = []
    for rid in ("upstream-v6", "fork-3.9.6"):
        data = kit.zip_bytes(FILES)
        archive = tmp_path / f"{rid}.zip"
        archive.write_bytes(data)
        release = kit.Release(rid)
        url = f"https://example.invalid/{rid}.zip"
        asset = kit.Asset(f"{rid}.zip", url, kit.sha256(data), "zip", len(data))
        unpacked = ensure_release(release, asset, cache, archive=archive, progress=False)
        out.append((release, asset, archive, unpacked / "zluda"))
    return cache, out


def test_clean_of_a_release_with_a_file_in_use_removes_nothing(cached, cache_listing) -> None:
    cache, [(_rel, _asset, _archive, folder), _other] = cached
    before, listed = cache_listing(cache), list_cache(cache)
    held = Holder(folder, "cublas64_12.dll")  # the second of three files
    with pytest.raises(FileInUseError) as info:
        clean_cache(cache, "upstream-v6", check=held)
    err = info.value
    assert err.exit_code == ERROR and err.paths == (str(folder / "cublas64_12.dll"),)
    assert err.kind == "file-in-use" and "upstream-v6" in err.message  # what was asked, who holds the file
    assert "ComfyUI.exe (pid 4242)" in err.message
    assert sorted(held.asked) == ["cublas64_12.dll", "nvcuda.dll", "nvml.dll", "upstream-v6.complete.json",
                                  "upstream-v6.zip"]
    assert held.in_place == [True]
    assert cache_listing(cache) == before and list_cache(cache) == listed
    with pytest.raises(FileInUseError) as info:
        clean_cache(cache, check=held)  # every release: not one removed
    assert len(info.value.paths) == 2 and str(folder / "cublas64_12.dll") in info.value.paths  # one a release
    assert cache_listing(cache) == before
    result = clean_cache(cache, "upstream-v6", check=Holder(folder))
    assert result.bytes_freed > 0 and [e.release_id for e in list_cache(cache)] == ["fork-3.9.6"]
    assert not any("upstream-v6" in p for p in cache_listing(cache))  # nothing left in tmp/ either


def test_reinstall_with_a_file_in_use_is_refused_before_anything_changes(cached, cache_listing) -> None:
    cache, [(release, asset, archive, folder), _other] = cached
    before = cache_listing(cache)
    held = Holder(folder, "nvml.dll")
    with pytest.raises(FileInUseError) as info:
        ensure_release(release, asset, cache, archive=archive, reinstall=True, progress=False, check=held)
    assert info.value.paths == (str(folder / "nvml.dll"),) and "upstream-v6" in info.value.message
    assert cache_listing(cache) == before and held.in_place == [True]
    again = ensure_release(release, asset, cache, archive=archive, reinstall=True, progress=False,
                           check=Holder(folder))
    assert again / "zluda" == folder and len(list_cache(cache)) == 2
    assert cache_listing(cache) == before


def test_what_a_clean_left_in_use_is_swept_by_the_next_clean(cached, cache_listing) -> None:
    cache, _ = cached
    leftover = cache / "tmp" / "upstream-v6@removing-abc" / "x" / "zluda" / "nvcuda.dll"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"MZ still loaded when the release was cleaned")
    assert [e.release_id for e in list_cache(cache)] == ["fork-3.9.6", "upstream-v6"]  # not a release
    clean_cache(cache, "upstream-v6")
    assert not (cache / "tmp" / "upstream-v6@removing-abc").exists()


def test_remove_tree_whole_checks_every_file_before_renaming(tmp_path: Path) -> None:
    tree = tmp_path / "rel"
    (tree / "sub").mkdir(parents=True)
    for name in ("a.dll", "sub/b.dll", "sub/c.dll"):
        (tree / name).write_bytes(name.encode())
    held = Holder(tree, "b.dll")
    with pytest.raises(FileInUseError):
        remove_tree_whole(tree, tmp_path / "aside", "remove rel", again="retry", check=held)
    assert sorted(held.asked) == ["a.dll", "b.dll", "c.dll"] and held.in_place == [True]
    assert sorted(p.name for p in tree.rglob("*")) == ["a.dll", "b.dll", "c.dll", "sub"]
    assert not (tmp_path / "aside").exists()
    assert remove_tree_whole(tree, tmp_path / "aside", "remove rel", again="retry", check=Holder(tree)) == 23
    assert not tree.exists() and not (tmp_path / "aside").exists()


def test_the_message_names_the_programs_or_says_what_to_close() -> None:
    known = in_use_error([InUse("C:\\t\\a.dll", IN_USE, ("python.exe (pid 9)",))], "restore C:\\t")
    assert known.message == ("cannot restore C:\\t: a file is in use: C:\\t\\a.dll (loaded or held open by a "
                             "running program: python.exe (pid 9)). Nothing was changed.")
    assert known.hint == "close python.exe (pid 9), then retry"
    unknown = in_use_error([InUse("a.dll", IN_USE), InUse("b.dll", IN_USE)], "restore X")
    assert unknown.kind == "file-in-use" and unknown.paths == ("a.dll", "b.dll")
    assert_golden("in_use_programs_unknown", str(unknown) + "\n")  # the count, the files, what to close


def test_posix_has_no_locks() -> None:
    assert platform_check()([Path(__file__)]) == []
