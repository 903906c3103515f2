"""The platform wheel's own builds of our shims (core.native, issue 29: no compiler at run time): taken
for exactly the sources they were built from when this host's loader resolves them, with no compiler on
PATH; compiled as before where one is missing or does not load. The wheel's build hook places them where
the launch looks (devtools.prebuilt -> build_redirector, build_interposer)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from zluda_runner.core import native, paths
from zluda_runner.core.errors import NativeBuildError
from zluda_runner.core.native import PREBUILT_CHECKED, compile_c, prebuilt_key

SOURCE = "int zr_prebuilt_answer(void) { return 42; }\n"


def _no_compiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No C compiler to be found from here on (PATH an empty folder, CC unset): a build would fail."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CC", raising=False)


def _prebuilt_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, src: Path, name: str,
                   built: Path) -> Path:
    folder = tmp_path / "prebuilt"
    place = folder / prebuilt_key([src], name)
    place.parent.mkdir(parents=True)
    shutil.copy2(built, place)
    monkeypatch.setattr(paths, "prebuilt_dir", lambda: folder)
    return place


def test_the_wheels_build_is_taken_without_a_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      native_dir: Path) -> None:
    src = tmp_path / "answer.c"
    src.write_text(SOURCE)
    place = _prebuilt_tree(tmp_path, monkeypatch, src, "libanswer.so",
                           compile_c([src], "libanswer.so", native_dir))
    _no_compiler(monkeypatch, tmp_path)
    with pytest.raises(NativeBuildError):  # no compiler here: a build is impossible
        compile_c([src], "libanswer.so", tmp_path / "cache")
    got = compile_c([src], "libanswer.so", tmp_path / "cache", prebuilt=True)
    assert got == place
    assert [p.name for p in (tmp_path / "cache" / PREBUILT_CHECKED).iterdir()]  # the loader's verdict kept
    # another source (an edited shim) is never served by a build of the old one
    src.write_text(SOURCE.replace("42", "43"))
    with pytest.raises(NativeBuildError):
        compile_c([src], "libanswer.so", tmp_path / "cache", prebuilt=True)


def test_a_build_that_does_not_load_here_is_compiled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           native_dir: Path) -> None:
    """A prebuilt library whose needed library is missing on this host: the loader refuses it (ld.so
    --list), so the shim is compiled here instead."""
    missing = tmp_path / "missing"
    compile_c([_write(tmp_path / "m.c", "int zr_m(void) { return 1; }\n")], "libzr_missing.so", missing,
              args=["-Wl,-soname,libzr_missing.so"])
    lib_dir = next(missing.iterdir())
    src = _write(tmp_path / "answer.c", SOURCE)
    needs = compile_c([src], "libanswer.so", native_dir / "needs",
                      args=[f"-L{lib_dir}", "-Wl,--no-as-needed", "-lzr_missing"])
    _prebuilt_tree(tmp_path, monkeypatch, src, "libanswer.so", needs)
    assert not native.loads_here(needs)
    got = compile_c([src], "libanswer.so", tmp_path / "cache", prebuilt=True)
    assert got.parent.parent == tmp_path / "cache" and native.loads_here(got)  # compiled here, loads


def test_the_build_hook_places_each_shim_where_the_launch_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native_dir: Path
) -> None:
    from zluda_runner.devtools.prebuilt import WHEEL_FOLDER, build_prebuilt
    from zluda_runner.launch.redirect import build_redirector
    from zluda_runner.trace.interposer import build_interposer

    placed = build_prebuilt(tmp_path / "work")  # as the hook does, with the compiler
    wheel = tmp_path / "wheel"
    for built, inside in placed.items():
        target = wheel / inside
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)
    monkeypatch.setattr(paths, "prebuilt_dir", lambda: wheel / WHEEL_FOLDER)
    _no_compiler(monkeypatch, tmp_path)  # installed: no compiler
    cache = tmp_path / "cache"
    assert build_redirector(cache) in {wheel / p for p in placed.values()}
    assert build_interposer(cache) in {wheel / p for p in placed.values()}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
