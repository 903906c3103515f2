"""The loader model against the real ld.so (LD_DEBUG=libs) on fixtures built by the test."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import require
from zluda_runner.binfmt.elf import read_elf
from zluda_runner.loader.glibc import (
    LoaderEnv,
    LoaderModel,
    split_search_path,
)
from zluda_runner.loader.hostinfo import parse_ld_so_help, read_ld_so_cache
from zluda_runner.loader.ldlog import bound_files, parse_ld_debug

from .conftest import assert_model_matches_real, model_load, run_real

RPATH = "-Wl,--disable-new-dtags,-rpath,{}"
RUNPATH = "-Wl,--enable-new-dtags,-rpath,{}"


def _link(lib: Path) -> list[str]:
    """Link against ``lib`` by its file name (DT_NEEDED = SONAME, or the file name if it has none)."""
    return [f"-L{lib.parent}", f"-l:{lib.name}"]


@pytest.fixture
def chain(cc_build: Callable[..., Path], place: Callable[[Path, str], Path], tmp_path: Path):
    """Build an $ORIGIN chain across two levels and return a builder for its variants."""

    def build(exe_flags: str, liba_flags: str | None, exe_extra_rpath: str = "") -> Path:
        libb = cc_build(["elf/chain_b.c"], "libb.so", args=["-Wl,-soname,libb.so"])
        a_args = ["-Wl,-soname,liba.so", *_link(libb)]
        if liba_flags:
            a_args.append(liba_flags.format("$ORIGIN/../b"))
        liba = cc_build(["elf/chain_a.c"], "liba.so", args=a_args)
        exe_rpath = "$ORIGIN/../a" + exe_extra_rpath
        exe = cc_build(["elf/chain_main.c"], "app", shared=False,
                       args=[*_link(liba), f"-Wl,-rpath-link,{libb.parent}", exe_flags.format(exe_rpath)])
        place(libb, "b/")
        place(liba, "a/")
        return place(exe, "bin/")

    return build


def test_origin_chain_two_levels_rpath(chain) -> None:
    exe = chain(RPATH, RPATH)
    model, real = assert_model_matches_real(exe)
    assert real.stdout.strip() == "a=42"
    libb = next(r for r in model.resolutions if r.name == "libb.so")
    assert libb.via == "rpath" and libb.via_object is not None and libb.via_object.endswith("/a/liba.so")
    liba = next(r for r in model.resolutions if r.name == "liba.so")
    assert liba.via == "rpath" and liba.via_object == str(exe)


def test_rpath_is_inherited_from_the_executable(chain) -> None:
    # liba has no RPATH: libb is found through the executable's DT_RPATH
    exe = chain(RPATH, None, exe_extra_rpath=":$ORIGIN/../b")
    model, real = assert_model_matches_real(exe)
    assert real.returncode == 0
    libb = next(r for r in model.resolutions if r.name == "libb.so")
    assert libb.via == "rpath" and libb.via_object == str(exe)


def test_runpath_is_not_inherited(chain, tmp_path: Path) -> None:
    exe = chain(RUNPATH, None, exe_extra_rpath=":$ORIGIN/../b")
    real = run_real(exe)
    model = model_load(exe)
    assert real.returncode != 0 and "libb.so: cannot open shared object file" in real.stderr
    assert not model.ok and any("libb.so" in e for e in model.errors)
    # LD_LIBRARY_PATH rescues it, in the model and for real
    model, real = assert_model_matches_real(exe, {"LD_LIBRARY_PATH": str(tmp_path / "b")})
    assert real.returncode == 0 and model.ok
    assert next(r for r in model.resolutions if r.name == "libb.so").via == "ld_library_path"


@pytest.mark.parametrize(
    ("flags", "with_llp", "expected"),
    [
        (RPATH, True, "rpath"),  # DT_RPATH beats LD_LIBRARY_PATH
        (RUNPATH, True, "llp"),  # LD_LIBRARY_PATH beats DT_RUNPATH
        (RUNPATH, False, "runpath"),
        (None, True, "llp"),
    ],
)
def test_search_order_precedence(
    which_libs, cc_build, place, tmp_path: Path, flags, with_llp, expected
) -> None:
    place(which_libs["rpath"], "r/")
    place(which_libs["llp"], "l/")
    place(which_libs["runpath"], "u/")
    exe_dir = "$ORIGIN/../r" if flags == RPATH else "$ORIGIN/../u"
    args = [*_link(which_libs["default"])] + ([flags.format(exe_dir)] if flags else [])
    exe = place(cc_build(["elf/print_which.c"], "which_app", shared=False, args=args), "bin/")
    env = {"LD_LIBRARY_PATH": str(tmp_path / "l")} if with_llp else {}
    model, real = assert_model_matches_real(exe, env)
    assert real.stdout.strip() == f"which={expected}"
    res = next(r for r in model.resolutions if r.name == "libwhich.so")
    assert Path(res.path or "").parent.name == {"rpath": "r", "llp": "l", "runpath": "u"}[expected]
    assert res.via == {"rpath": "rpath", "llp": "ld_library_path", "runpath": "runpath"}[expected]


def test_versioned_import_and_replacements(cc_build, place, tmp_path: Path) -> None:
    foo = cc_build(["elf/foo.c"], "libfoo.so.1", deps=["elf/foo.map"],
                   args=["-DFOO_NEW_VALUE=2", "-Wl,-soname,libfoo.so.1",
                         f"-Wl,--version-script,{Path(__file__).parents[1] / 'fixtures/elf/foo.map'}"])
    exe = place(cc_build(["elf/uses_foo.c"], "uses_foo", shared=False,
                         args=[*_link(foo), RPATH.format("$ORIGIN/../lib")]), "bin/")
    place(foo, "lib/")
    info = read_elf(exe)
    assert sorted(info.version_needs["libfoo.so.1"]) == ["FOO_1.0", "FOO_2.0"]
    assert {(s.name, s.version, s.file) for s in info.imports if s.file == "libfoo.so.1"} == {
        ("foo_old", "FOO_1.0", "libfoo.so.1"), ("foo_new", "FOO_2.0", "libfoo.so.1")}
    model, real = assert_model_matches_real(exe)
    assert real.stdout.strip() == "foo=3" and model.ok
    assert {c.status for c in model.version_checks if c.file == "libfoo.so.1"} == {"ok"}

    # a replacement defining FOO_1.0 only: fatal "version not found", found through LD_LIBRARY_PATH
    # (the exe is rebuilt with RUNPATH so LD_LIBRARY_PATH wins)
    old_map = Path(__file__).parents[1] / "fixtures/elf/foo_old_only.map"
    old = cc_build(["elf/foo.c"], "libfoo.so.1", deps=["elf/foo_old_only.map"],
                   args=["-DFOO_NEW_VALUE=5", "-Wl,-soname,libfoo.so.1", f"-Wl,--version-script,{old_map}"])
    unversioned = cc_build(["elf/foo.c"], "libfoo.so.1",
                           args=["-DFOO_NEW_VALUE=6", "-Wl,-soname,libfoo.so.1"])
    exe2 = place(cc_build(["elf/uses_foo.c"], "uses_foo_rp", shared=False,
                          args=[*_link(foo), RUNPATH.format("$ORIGIN/../lib")]), "bin/")
    place(old, "old/")
    place(unversioned, "unv/")
    model, real = assert_model_matches_real(exe2, {"LD_LIBRARY_PATH": str(tmp_path / "old")})
    assert real.returncode != 0 and "version `FOO_2.0' not found" in real.stderr
    missing = [c for c in model.version_problems if c.file == "libfoo.so.1"]
    assert [(c.version, c.status) for c in missing] == [("FOO_2.0", "missing")]
    assert not model.ok and "FOO_2.0" in model.errors[0]

    model, real = assert_model_matches_real(exe2, {"LD_LIBRARY_PATH": str(tmp_path / "unv")})
    assert real.returncode != 0 and "check_match" in real.stderr
    statuses = {c.status for c in model.version_checks if c.file == "libfoo.so.1"}
    assert statuses == {"unversioned-provider"} and model.ok  # passes the load-time check


def test_preload_matches_by_soname_only(cc_build, place, tmp_path: Path, which_libs) -> None:
    # the executable needs libwhich.so; a preloaded file with that SONAME satisfies it, another does not
    exe = place(cc_build(["elf/print_which.c"], "which_app_plain", shared=False,
                         args=[*_link(which_libs["default"]), RPATH.format("$ORIGIN/../r")]), "bin/")
    place(which_libs["rpath"], "r/")
    same_soname = place(which_libs["llp"], "pre/libshim-any-name.so")
    # (not defining which(): a preloaded definition would interpose on the symbol whichever file binds)
    other = cc_build(["elf/plain.c"], "libother.so", args=["-Wl,-soname,libother.so"])
    for preload, expected in ((str(same_soname), "llp"), (str(other), "rpath")):
        env = {"LD_PRELOAD": preload}
        model, real = assert_model_matches_real(exe, env)
        assert real.stdout.strip() == f"which={expected}"
        binding = model.binding("libwhich.so")
        assert binding is not None and Path(binding).parent.name == ("pre" if expected == "llp" else "r")
        assert any(r.via == "preload" and r.name == preload for r in model.resolutions)
    loaded = model_load(exe, {"LD_PRELOAD": str(same_soname)})
    res = next(r for r in loaded.resolutions if r.name == "libwhich.so")
    assert res.via == "already-loaded"


def test_dlopen_uses_the_callers_runpath(cc_build, place, tmp_path: Path, which_libs) -> None:
    place(which_libs["runpath"], "u/")
    place(which_libs["llp"], "l/")
    lib = cc_build(["elf/dlopen_which.c"], "libdlw.so",
                   args=["-Wl,-soname,libdlw.so", RUNPATH.format("$ORIGIN/../u"), "-ldl"])
    lib_placed = place(lib, "a/")
    exe = place(cc_build(["elf/dlopen_main.c"], "dlw_app", shared=False,
                         args=[*_link(lib), RPATH.format("$ORIGIN/../a")]), "bin/")
    for env, expected in (({}, "runpath"), ({"LD_LIBRARY_PATH": str(tmp_path / "l")}, "llp")):
        real = run_real(exe, env)
        assert real.stdout.strip() == f"which={expected}", real.stderr
        host = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        model = LoaderModel(LoaderEnv.from_host({**host, **env}))
        loaded = model.load(exe)
        res = model.resolve_dlopen("libwhich.so", read_elf(lib_placed), [read_elf(exe)],
                                   loaded=loaded.objects)
        assert os.path.realpath(res.path or "") == os.path.realpath(real.bindings["libwhich.so"])
        assert res.via == ("runpath" if expected == "runpath" else "ld_library_path")


def test_needed_with_slash_and_no_soname(cc_build, place, tmp_path: Path) -> None:
    plain = cc_build(["elf/plain.c"], "libplain.so")
    info = read_elf(plain)
    assert info.soname is None and info.elf_type == "DYN"
    placed = place(plain, "lib/")
    model = LoaderModel(LoaderEnv(ld_library_path=[str(tmp_path / "lib")]))
    res = model.resolve("libplain.so", read_elf(placed))
    assert res.via == "ld_library_path" and res.path == str(placed)
    direct = model.resolve(str(placed), read_elf(placed))
    assert direct.via == "direct" and direct.path == str(placed)
    missing = model.resolve("libnothere.so.9", read_elf(placed))
    assert missing.via == "not-found" and missing.path is None and missing.tried


def test_wrong_class_candidate_is_skipped_and_non_elf_is_fatal(cc_build, place, tmp_path: Path) -> None:
    plain = cc_build(["elf/plain.c"], "libplain.so")
    good = place(plain, "good/")
    bad = tmp_path / "bad" / "libplain.so"
    bad.parent.mkdir()
    header = bytearray(52)
    header[:7] = b"\x7fELF\x01\x01\x01"  # a 32-bit ELF in an earlier search dir: skipped, like glibc
    bad.write_bytes(bytes(header))
    env = LoaderEnv(ld_library_path=[str(bad.parent), str(good.parent)])
    res = LoaderModel(env).resolve("libplain.so", read_elf(good))
    assert res.path == str(good) and str(bad) in res.tried
    bad.write_text("INPUT(-lplain)\n")  # a linker script: glibc stops with "invalid ELF header"
    res = LoaderModel(env).resolve("libplain.so", read_elf(good))
    assert res.via == "invalid-elf" and res.path == str(bad) and not res.found


def test_ld_so_cache_and_help_parsing() -> None:
    require(Path("/etc/ld.so.cache").exists(), "no /etc/ld.so.cache on this machine")
    cache = read_ld_so_cache()
    assert "libc.so.6" in cache and Path(cache["libc.so.6"]).exists()
    help_text = (
        "Shared library search path:\n  (libraries located via /etc/ld.so.cache)\n"
        "  /lib64 (system search path)\n  /usr/lib64 (system search path)\n\n"
        "Subdirectories of glibc-hwcaps directories, in priority order:\n"
        "  x86-64-v4\n  x86-64-v3 (supported, searched)\n  x86-64-v2 (supported, searched)\n\n"
        "Legacy HWCAP subdirectories under library search path directories:\n"
        "  haswell (AT_PLATFORM; supported, searched)\n  tls (supported, searched)\n  avx512_1\n"
    )
    dirs, subdirs = parse_ld_so_help(help_text)
    assert dirs == ["/lib64", "/usr/lib64"]
    assert subdirs == ["glibc-hwcaps/x86-64-v3", "glibc-hwcaps/x86-64-v2", "tls/haswell", "tls", "haswell"]
    assert split_search_path("/a::/b;/c") == ["/a", ".", "/b", "/c"]


def test_hwcap_subdir_order_matches_the_real_loader(cc_build, place, tmp_path: Path, which_libs) -> None:
    env = LoaderEnv.from_host({})
    require(bool(env.hwcap_subdirs), "this ld.so reports no hwcap subdirectories")
    exe = place(cc_build(["elf/print_which.c"], "which_app_hw", shared=False,
                         args=[*_link(which_libs["default"])]), "bin/")
    sub = env.hwcap_subdirs[-1]
    place(which_libs["llp"], f"l/{sub}/")
    place(which_libs["rpath"], "l/")
    model, real = assert_model_matches_real(exe, {"LD_LIBRARY_PATH": str(tmp_path / "l")})
    assert real.stdout.strip() == "which=llp"
    assert f"/l/{sub}/libwhich.so" in (model.binding("libwhich.so") or "")


def test_ld_debug_failed_search_and_pids() -> None:
    text = (
        "      101:\tfind library=libx.so.1 [0]; searching\n"
        "      101:\t search path=/nowhere\t\t(LD_LIBRARY_PATH)\n"
        "      101:\t  trying file=/nowhere/libx.so.1\n"
        "      101:\t\n"
        "      202:\tfind library=libc.so.6 [0]; searching\n"
        "      202:\t search cache=/etc/ld.so.cache\n"
        "      202:\t  trying file=/lib/x86_64-linux-gnu/libc.so.6\n"
        "      202:\t\n"
        "      202:\tcalling init: /lib/x86_64-linux-gnu/libc.so.6\n"
    )
    assert bound_files(parse_ld_debug(text, pid=101)) == {}
    assert bound_files(parse_ld_debug(text, pid=202)) == {"libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6"}
    assert "libx.so.1" not in bound_files(parse_ld_debug(text))
