"""read_elf on fixtures built by the test and on the real NVIDIA libcudart, cross-checked with readelf."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import require
from zluda_runner.binfmt.elf import ElfInfo, ElfSymbol, expand_dst, read_elf
from zluda_runner.binfmt.filecache import cached_read
from zluda_runner.core.errors import BinaryFormatError

FOO_MAP = Path(__file__).parents[1] / "fixtures" / "elf" / "foo.map"


@pytest.fixture(scope="module")
def libfoo(cc_build: Callable[..., Path]) -> Path:
    return cc_build(["elf/foo.c"], "libfoo.so.1", deps=["elf/foo.map"],
                    args=["-DFOO_NEW_VALUE=2", "-Wl,-soname,libfoo.so.1", f"-Wl,--version-script,{FOO_MAP}"])


def test_version_definitions_and_exports(libfoo: Path) -> None:
    info = read_elf(libfoo)
    assert (info.elf_class, info.machine, info.elf_type) == (64, "x86_64", "DYN")
    assert info.soname == "libfoo.so.1" and info.version_base == "libfoo.so.1"
    assert info.version_defs == ["FOO_1.0", "FOO_2.0"]
    exports = {(s.name, s.version) for s in info.exports}
    assert {("foo_old", "FOO_1.0"), ("foo_new", "FOO_2.0")} <= exports
    assert info.interpreter is None and info.rpath == [] and info.runpath == []


def test_rpath_runpath_raw_entries(cc_build: Callable[..., Path], libfoo: Path) -> None:
    link = [f"-L{libfoo.parent}", "-l:libfoo.so.1"]
    rp = read_elf(cc_build(["elf/uses_foo.c"], "u_rp", shared=False,
                           args=[*link, "-Wl,--disable-new-dtags,-rpath,$ORIGIN/../a:/opt/x"]))
    ru = read_elf(cc_build(["elf/uses_foo.c"], "u_ru", shared=False,
                           args=[*link, "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../a:/opt/x"]))
    none = read_elf(cc_build(["elf/uses_foo.c"], "u_none", shared=False, args=link))
    assert (rp.rpath, rp.runpath) == (["$ORIGIN/../a", "/opt/x"], [])
    assert (ru.rpath, ru.runpath) == ([], ["$ORIGIN/../a", "/opt/x"])
    assert (none.rpath, none.runpath) == ([], [])
    assert rp.interpreter and rp.interpreter.startswith("/") and rp.soname is None
    assert "foo_new" in {s.name for s in rp.imports}


def test_expand_dst() -> None:
    assert expand_dst("$ORIGIN/../lib", "/o/bin") == "/o/bin/../lib"
    assert expand_dst("${ORIGIN}/x:$LIB/$PLATFORM", "/o", lib="lib/x86_64-linux-gnu") == (
        "/o/x:lib/x86_64-linux-gnu/x86_64")
    assert expand_dst("$ORIGINAL/x", "/o") == "$ORIGINAL/x"  # not a token: name continues


def test_symbols_false_and_json_round_trip(libfoo: Path) -> None:
    bare = read_elf(libfoo, symbols=False)
    assert bare.imports == [] and bare.exports == [] and not bare.symbols_read
    assert bare.version_defs == ["FOO_1.0", "FOO_2.0"]
    full = read_elf(libfoo)
    again = ElfInfo.from_json(full.to_json())
    assert again == full and isinstance(again.exports[0], ElfSymbol)


def test_file_cache_hits_and_invalidates(libfoo: Path, tmp_path: Path) -> None:
    calls: list[Path] = []

    def reader(p: Path) -> ElfInfo:
        calls.append(p)
        return read_elf(p)

    reader.cache_version = 1  # type: ignore[attr-defined]
    lib = tmp_path / "libfoo.so.1"
    shutil.copy2(libfoo, lib)
    cache = tmp_path / "cache"
    first = cached_read(lib, "elf", reader, cache, ElfInfo)
    second = cached_read(lib, "elf", reader, cache, ElfInfo)
    assert first == second and len(calls) == 1
    entries = list((cache / "binfmt").rglob("*.json"))
    assert [e.name for e in entries] == ["elf.json"]  # one file per kind, one entry per file in it
    assert list(json.loads(entries[0].read_text())["files"]) == [str(lib)]
    entries[0].write_text("{not json")  # a corrupt cache file is a miss, then rewritten
    assert cached_read(lib, "elf", reader, cache, ElfInfo) == first and len(calls) == 2
    shutil.copy(libfoo, lib)  # new mtime: a miss
    lib.touch()
    cached_read(lib, "elf", reader, cache, ElfInfo)
    assert len(calls) == 3
    assert cached_read(lib, "elf", reader, None, ElfInfo) == first and len(calls) == 4
    cached_read(lib, "elf", reader, cache, ElfInfo)
    assert len(calls) == 4
    moved = tmp_path / "libfoo.moved"  # same path, size and mtime, another inode: a miss
    shutil.copy2(lib, moved)
    os.replace(moved, lib)
    cached_read(lib, "elf", reader, cache, ElfInfo)
    assert len(calls) == 5


def test_skip_cxx_leaves_out_only_unversioned_cxx_names(cc_build: Callable[..., Path]) -> None:
    dep_map = FOO_MAP.parent / "cxx_dep.map"
    dep = cc_build(["elf/cxx_dep.c"], "libcxxdep.so.1", deps=["elf/cxx_dep.map"],
                   args=["-Wl,-soname,libcxxdep.so.1", f"-Wl,--version-script,{dep_map}"])
    lib = cc_build(["elf/cxx_names.c"], "libcxxnames.so", args=[f"-L{dep.parent}", "-l:libcxxdep.so.1"])
    full, skipped = read_elf(lib), read_elf(lib, skip_cxx=True)
    assert {(s.name, s.file) for s in full.imports} >= {
        ("_Z7dep_cxxv", "libcxxdep.so.1"), ("_Z7ext_cxxv", None), ("ext_c", None)}
    assert {"_ZN3api4callEv", "api_c"} <= {s.name for s in full.exports}
    assert skipped.imports == [s for s in full.imports if s.file is not None or not s.name.startswith("_Z")]
    assert skipped.exports == [s for s in full.exports if not s.name.startswith("_Z")]
    assert "_Z7dep_cxxv" in {s.name for s in skipped.imports}
    assert dataclasses.replace(skipped, imports=full.imports, exports=full.exports) == full


def test_bad_inputs_raise_with_hint(tmp_path: Path, libfoo: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    truncated = tmp_path / "libtrunc.so"
    truncated.write_bytes(libfoo.read_bytes()[:2000])
    header_only = tmp_path / "libhdr.so"
    header_only.write_bytes(libfoo.read_bytes()[:40])
    elf32 = tmp_path / "lib32.so"
    elf32.write_bytes(_minimal_elf32(machine=3))
    for path, words in ((text, "not an ELF"), (truncated, "truncated"), (header_only, "truncated"),
                        (elf32, "32-bit i386"), (tmp_path / "missing.so", "cannot read")):
        with pytest.raises(BinaryFormatError) as exc:
            read_elf(path)
        assert words in exc.value.message and exc.value.hint
    info = read_elf(elf32, allow_foreign=True)
    assert (info.elf_class, info.machine, info.needed) == (32, "i386", [])


def _minimal_elf32(machine: int) -> bytes:
    """A bare 32-bit little-endian ELF header (no program or section headers)."""
    import struct

    ident = b"\x7fELF" + bytes([1, 1, 1]) + bytes(9)
    return ident + struct.pack("<HHIIIIIHHHHHH", 3, machine, 1, 0, 0, 0, 0, 52, 0, 0, 0, 0, 0)


def _readelf(*args: str) -> str:
    return subprocess.run(["readelf", *args], capture_output=True, text=True, check=True).stdout


def test_real_libcudart_against_readelf(cudart_path: Path) -> None:
    require(shutil.which("readelf") is not None, "readelf (binutils) not installed")
    info = read_elf(cudart_path)
    dyn = _readelf("-dW", str(cudart_path))
    assert info.soname == re.search(r"\(SONAME\).*\[(.+?)\]", dyn).group(1)  # type: ignore[union-attr]
    assert info.needed == re.findall(r"\(NEEDED\).*\[(.+?)\]", dyn)

    ver = _readelf("-VW", str(cudart_path))
    needs: dict[str, list[str]] = {}
    current = ""
    for line in ver.splitlines():
        if m := re.search(r"File: (\S+)", line):
            current = m.group(1)
            needs[current] = []
        elif (m := re.search(r"Name: (\S+)\s+Flags", line)) and current:
            needs[current].append(m.group(1))
    assert info.version_needs == needs
    defs = re.findall(r"Rev: \d+\s+Flags: (\S+)\s+Index: \d+\s+Cnt: \d+\s+Name: (\S+)", ver)
    assert info.version_base == next(n for f, n in defs if f == "BASE")
    assert info.version_defs == [n for f, n in defs if f != "BASE"]

    syms = _readelf("--dyn-syms", "-W", str(cudart_path))
    rows = [line.split() for line in syms.splitlines() if re.match(r"\s+\d+:", line)]
    defined = [r for r in rows if len(r) >= 8 and r[6] != "UND" and r[4] in ("GLOBAL", "WEAK", "UNIQUE")
               and r[3] not in ("SECTION", "FILE")]
    undefined = [r for r in rows if len(r) >= 8 and r[6] == "UND" and r[4] in ("GLOBAL", "WEAK")]
    assert len(info.exports) == len(defined) and len(info.imports) == len(undefined)
    ours = {(s.name, s.version) for s in info.exports}
    for row in defined[:: max(1, len(defined) // 15)]:
        name, _, version = row[7].partition("@")
        assert (name, version.lstrip("@") or None) in ours
    imports = {(s.name, s.version, s.file) for s in info.imports}
    for row in undefined[:: max(1, len(undefined) // 10)]:
        name, _, version = row[7].partition("@")
        version = version.split(" ")[0].lstrip("@")
        if version:
            assert any(i[0] == name and i[1] == version and i[2] in info.needed for i in imports), row


# --------------------------------------------------------------------------- hostile files
#
# An adversarial pass found that a 96 KB ELF whose version needs all share one chain of
# entries took 35 s and 2.5 GB in `inspect`, and a 250 KB one ran out of memory. These files
# are crafted the same way (a hostile input is by nature ours to write); each is read in a child
# process under RLIMIT_CPU / RLIMIT_AS, so a reader that walks them unbounded is killed there
# instead of passing slowly.

_SHT_STRTAB, _SHT_DYNAMIC, _SHT_DYNSYM, _SHT_VERDEF, _SHT_VERNEED = 3, 6, 11, 0x6FFFFFFD, 0x6FFFFFFE


def _elf64(sections: list[tuple[int, bytes, int, int]]) -> bytes:
    """A 64-bit x86-64 ET_DYN file holding ``sections``: (sh_type, data, sh_link, sh_info) each,
    after the null section; no program headers."""
    import struct

    body = bytearray()
    placed = []
    for sh_type, data, link, inf in sections:
        while len(body) % 8:
            body.append(0)
        placed.append((sh_type, 64 + len(body), len(data), link, inf))
        body += data
    while len(body) % 8:
        body.append(0)
    shoff = 64 + len(body)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64,
                                 len(sections) + 1, 0)
    shdrs = bytes(64) + b"".join(
        struct.pack("<IIQQQQIIQQ", 0, sh_type, 0, 0, off, size, link, inf, 1, 0)
        for sh_type, off, size, link, inf in placed
    )
    return header + bytes(body) + shdrs


def _shared_verneed_chain(needs: int = 5000, aux: int = 5000) -> bytes:
    """``needs`` version-need entries (16 bytes each) whose aux pointers all lead to one chain of
    ``aux`` entries: needs x aux names for a file of (needs + aux) * 16 bytes."""
    import struct

    strtab = b"\0libx.so\0V1\0"
    table = bytearray()
    aux_start = needs * 16
    for i in range(needs):
        table += struct.pack("<HHIII", 1, aux, 1, aux_start - i * 16, 16 if i < needs - 1 else 0)
    for j in range(aux):
        table += struct.pack("<IHHII", 0, 0, 2, 9, 16 if j < aux - 1 else 0)
    return _elf64([(_SHT_STRTAB, strtab, 0, 0), (_SHT_VERNEED, bytes(table), 1, needs)])


def _suffix_names(length: int = 150_000, count: int = 6000) -> bytes:
    """``count`` exported symbols whose names start one byte apart in one ``length``-byte string:
    every name is a different suffix, so decoding them all costs count x length bytes."""
    import struct

    strtab = b"\0" + b"A" * length + b"\0"
    syms = bytes(24) + b"".join(struct.pack("<IBBHQQ", 1 + i, 0x12, 0, 1, 0, 0) for i in range(count))
    return _elf64([(_SHT_STRTAB, strtab, 0, 0), (_SHT_DYNSYM, syms, 1, 1)])


def _long_needed(length: int = 100_000, count: int = 10_000) -> bytes:
    """``count`` DT_NEEDED entries naming the same ``length``-byte string."""
    import struct

    strtab = b"\0" + b"l" * length + b"\0"
    dyn = b"".join(struct.pack("<qQ", 1, 1) for _ in range(count)) + bytes(16)
    return _elf64([(_SHT_STRTAB, strtab, 0, 0), (_SHT_DYNAMIC, dyn, 1, 0)])


def _overlapping_verdef(size: int = 90_000) -> bytes:
    """Version definitions whose vd_next is 1: each entry overlaps the previous one."""
    import struct

    strtab = b"\0V\0"
    table = bytearray(size)
    for off in range(0, size - 28, 1):
        struct.pack_into("<H", table, off, 1)
    for off in range(0, size - 28, 28):
        struct.pack_into("<HHHHIII", table, off, 1, 0, 2, 1, 0, 20, 1)
        struct.pack_into("<II", table, off + 20, 1, 0)
    return _elf64([(_SHT_STRTAB, strtab, 0, 0), (_SHT_VERDEF, bytes(table), 1, size)])


_BOUNDED_READ = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))
resource.setrlimit(resource.RLIMIT_CPU, (8, 8))
from zluda_runner.binfmt.elf import read_elf
from zluda_runner.core.errors import BinaryFormatError
try:
    read_elf(sys.argv[1])
except BinaryFormatError as exc:
    print("REFUSED", exc.message)
    print("HINT", exc.hint)
else:
    print("READ")
"""


@pytest.mark.parametrize(
    "build",
    [_shared_verneed_chain, _suffix_names, _long_needed, _overlapping_verdef],
    ids=["verneed-shared-aux-chain", "dynsym-suffix-names", "needed-long-names", "verdef-overlapping"],
)
def test_hostile_tables_are_refused_within_bounds(tmp_path: Path, build: Callable[[], bytes]) -> None:
    import os
    import sys

    hostile = tmp_path / "libhostile.so"
    hostile.write_bytes(build())
    assert hostile.stat().st_size < 300_000
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", _BOUNDED_READ, str(hostile)], capture_output=True,
                          text=True, env=env, timeout=300)
    # killed by RLIMIT_CPU (SIGXCPU) or MemoryError under RLIMIT_AS: the walk was not bounded
    assert done.returncode == 0, f"rc {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.startswith("REFUSED"), done.stdout
    assert str(hostile) in done.stdout and "corrupt" in done.stdout
    assert "HINT" in done.stdout


def test_well_formed_files_stay_readable_after_the_bounds(libfoo: Path,
                                                          cc_build: Callable[..., Path]) -> None:
    """The bounds refuse only what no linker writes: real version needs/defs still read in full."""
    user = read_elf(cc_build(["elf/uses_foo.c"], "u_bounds", shared=False,
                             args=[f"-L{libfoo.parent}", "-l:libfoo.so.1"]))
    assert "libfoo.so.1" in user.version_needs and user.version_needs["libc.so.6"]
    assert read_elf(libfoo).version_defs == ["FOO_1.0", "FOO_2.0"]
