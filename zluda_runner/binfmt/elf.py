"""Read what an ELF file asks of the dynamic loader, without reading it whole.

Everything is read straight from an ``mmap`` with ``struct``: the ELF, program
and section headers, the dynamic section, the dynamic symbol table and the GNU
symbol-versioning sections (``.dynsym``, ``.gnu.version``, ``.gnu.version_r``,
``.gnu.version_d``, ``.dynstr``). Only those few sections are touched, so a
500 MB library costs a few megabytes of page cache. libtorch_cpu.so has ~75k
dynamic symbols, nearly all C++: ``skip_cxx`` leaves ``_Z``-mangled names
undecoded (sorted out in C, never one by one in Python).

Every walk is bounded by the file, because a hostile file is cheap to make (a
96 KB one whose version needs share one chain of entries once cost 35 s and
2.5 GB): table entries may not overlap or be visited twice, links move
forward by at least one entry, and the strings decoded in total may not exceed
a small multiple of the file's size (each name is also capped). Anything else
is a :class:`BinaryFormatError` naming the file.
"""

from __future__ import annotations

import itertools
import mmap
import os
import re
import struct
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zluda_runner.binfmt.elfsyms import select_symbols
from zluda_runner.core.errors import BinaryFormatError
from zluda_runner.core.serial import JsonMixin

#: bump when ElfInfo's content or meaning changes (invalidates the file cache)
READER_VERSION = 3

ELF_MAGIC = b"\x7fELF"

# e_machine numbers
_MACHINE_NUMBERS = {62: "x86_64", 3: "i386", 183: "aarch64", 40: "arm", 21: "ppc64", 20: "ppc",
                    22: "s390", 243: "riscv", 8: "mips", 258: "loongarch"}

_STB_WEAK = 2
_VER_FLG_BASE, _VER_FLG_WEAK = 0x1, 0x2
_DF_1_NODEFLIB = 0x800

_BAD_ELF_HINT = "pass a shared library (.so) or executable built for x86-64 Linux"

#: the longest library name / search path / version name we accept (glibc's PATH_MAX is 4096)
MAX_DYNAMIC_STRING = 4096
#: the longest symbol name (C++ template names in libtorch reach a few KiB)
MAX_SYMBOL_NAME = 64 * 1024
#: strings decoded per file: this many times the file's size, plus a floor. Linkers share suffixes,
#: so real files decode a little more than their string tables hold, never many times more.
STRING_BUDGET_FACTOR = 4
STRING_BUDGET_FLOOR = 1 << 20


@dataclass(frozen=True, slots=True)
class ElfSymbol(JsonMixin):
    """One dynamic symbol.

    Imports: ``file`` is the DT_NEEDED file that the symbol's version belongs to
    (from the version needs), ``None`` when the import is unversioned.
    Exports: ``file`` is None; ``version`` is the defining version, None if
    unversioned. ``hidden`` marks a non-default version (``sym@V``, not ``sym@@V``).
    """

    name: str
    version: str | None
    file: str | None
    weak: bool = False
    hidden: bool = False


@dataclass
class ElfInfo(JsonMixin):
    """The loader-facing facts of one ELF file."""

    path: str
    elf_class: int
    machine: str
    elf_type: str
    soname: str | None = None
    needed: list[str] = field(default_factory=list)
    rpath: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)
    version_needs: dict[str, list[str]] = field(default_factory=dict)
    version_defs: list[str] = field(default_factory=list)
    imports: list[ElfSymbol] = field(default_factory=list)
    exports: list[ElfSymbol] = field(default_factory=list)
    interpreter: str | None = None
    #: the base version definition (by convention the SONAME), excluded from version_defs
    version_base: str | None = None
    #: needed versions marked VER_FLG_WEAK (a miss is a warning, not an error), per file
    version_needs_weak: dict[str, list[str]] = field(default_factory=dict)
    #: DF_1_NODEFLIB: the loader skips ld.so.cache and the default dirs for this object's needs
    nodeflib: bool = False
    #: False when the file's symbols were not read (``read_elf(..., symbols=False)``)
    symbols_read: bool = True
    #: DT_VERSYM present (a ``.gnu.version`` table): glibc then accepts versioned references to
    #: exports at index 1 (global) even without any DT_VERDEF, the Rust cdylib shape
    has_versym: bool = False

    # Fast JSON paths: the generic JsonMixin walk is ~50x slower on 75k symbols.
    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k not in ("imports", "exports")}
        data["imports"] = [_sym_to_list(s) for s in self.imports]
        data["exports"] = [_sym_to_list(s) for s in self.exports]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ElfInfo:
        plain = dict(data)
        imports = [_sym_from_any(s) for s in plain.pop("imports", [])]
        exports = [_sym_from_any(s) for s in plain.pop("exports", [])]
        known = set(cls.__dataclass_fields__)
        return cls(imports=imports, exports=exports, **{k: v for k, v in plain.items() if k in known})

    @property
    def is_x86_64(self) -> bool:
        return self.elf_class == 64 and self.machine == "x86_64"


def _sym_to_list(s: ElfSymbol) -> list[Any]:
    return [s.name, s.version, s.file, s.weak, s.hidden]


def _sym_from_any(v: Any) -> ElfSymbol:
    if isinstance(v, dict):
        return ElfSymbol(v["name"], v.get("version"), v.get("file"), bool(v.get("weak", False)),
                         bool(v.get("hidden", False)))
    return ElfSymbol(*v)


_DST_RE = re.compile(r"\$(?:\{(ORIGIN|LIB|PLATFORM)\}|(ORIGIN|LIB|PLATFORM)(?![A-Za-z0-9_]))")


def expand_dst(entry: str, origin: str, *, lib: str = "lib64", platform: str = "x86_64") -> str:
    """Expand glibc's dynamic string tokens ``$ORIGIN``/``${ORIGIN}``, ``$LIB``, ``$PLATFORM``.

    ``origin`` is the directory of the object the entry belongs to. ``$LIB`` is
    ``lib64`` on Fedora-like systems and ``lib/x86_64-linux-gnu`` on Debian.
    """
    values = {"ORIGIN": origin, "LIB": lib, "PLATFORM": platform}
    return _DST_RE.sub(lambda m: values[m.group(1) or m.group(2)], entry)


ELF_PEEK_BYTES = 20  # what :func:`elf_header` needs of a file


def peek_elf_header(path: str | Path) -> tuple[int, str] | None:
    """(class, machine) from the first 20 bytes, or None if not an ELF file. Cheap."""
    try:
        with open(path, "rb") as fh:
            return elf_header(fh.read(ELF_PEEK_BYTES))
    except OSError:
        return None


def elf_header(head: bytes | None) -> tuple[int, str] | None:
    """(class, machine) from a file's first 20 bytes (``head``), or None if they are not an ELF file's."""
    if head is None or len(head) < ELF_PEEK_BYTES or head[:4] != ELF_MAGIC or head[4] not in (1, 2) \
            or head[5] not in (1, 2):
        return None
    order = "<" if head[5] == 1 else ">"
    (e_machine,) = struct.unpack_from(order + "H", head, 18)
    return (32 if head[4] == 1 else 64), _MACHINE_NUMBERS.get(e_machine, f"em{e_machine}")


def read_elf(path: str | Path, *, symbols: bool = True, allow_foreign: bool = False,
             skip_cxx: bool = False, side: str | None = None) -> ElfInfo:
    """Read an ELF file's loader-facing facts.

    ``skip_cxx``: leave out the ``_Z``-mangled exports and unversioned imports (their names are never
    decoded): what inspection keeps of libtorch's symbol tables. ``side``: ``"imports"`` or
    ``"exports"`` reads only those symbols (default: both).

    Raises :class:`BinaryFormatError` for a missing, non-ELF, truncated or
    corrupt file, and - unless ``allow_foreign`` - for anything that is not a
    64-bit x86-64 ELF (ZLUDA exists only for x86-64).
    """
    p = Path(path)
    try:
        fh = open(p, "rb")  # noqa: SIM115 - closed below, mmap needs the fd
    except OSError as exc:
        raise BinaryFormatError(
            f"cannot read {p}: {exc.strerror or exc}", hint="check the path and its permissions"
        ) from exc
    with fh:
        head = fh.read(64)
        if head[:4] != ELF_MAGIC:
            raise BinaryFormatError(f"{p} is not an ELF file", hint=_BAD_ELF_HINT)
        if len(head) < 52 or head[4] not in (1, 2) or head[5] not in (1, 2):
            raise BinaryFormatError(f"{p} is a truncated or corrupt ELF file (bad header)",
                                    hint=_BAD_ELF_HINT)
        size = os.fstat(fh.fileno()).st_size
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                info = _read(p, head, _Image(mm, size), symbols, skip_cxx, side)
            finally:
                mm.close()
        except (struct.error, ValueError, IndexError, KeyError, UnicodeDecodeError) as exc:
            raise BinaryFormatError(
                f"{p} is a truncated or corrupt ELF file ({exc})", hint=_BAD_ELF_HINT
            ) from exc
    if not allow_foreign and not info.is_x86_64:
        raise BinaryFormatError(
            f"{p} is a {info.elf_class}-bit {info.machine} ELF file, not x86-64",
            hint="ZLUDA and zluda-runner handle 64-bit x86-64 builds only; point at the x86-64 install",
        )
    return info


read_elf.cache_version = READER_VERSION  # type: ignore[attr-defined]


_SHT_STRTAB, _SHT_DYNAMIC, _SHT_NOBITS, _SHT_DYNSYM = 3, 6, 8, 11
_SHT_GNU_VERDEF, _SHT_GNU_VERNEED, _SHT_GNU_VERSYM = 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
_PT_LOAD, _PT_DYNAMIC, _PT_INTERP = 1, 2, 3
_DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 1, 5, 10, 14, 15, 29
_DT_FLAGS_1 = 0x6FFFFFFB
_DT_VERSYM = 0x6FFFFFF0


@dataclass(frozen=True, slots=True)
class _Shdr:
    type: int
    offset: int
    size: int
    link: int
    info: int


class _Image:
    """The mapped file and what reading it may still cost: every decoded string is charged."""

    def __init__(self, mm: mmap.mmap, size: int) -> None:
        self.mm = mm
        self.size = size
        self.budget = STRING_BUDGET_FACTOR * size + STRING_BUDGET_FLOOR

    def charge(self, n: int) -> None:
        self.budget -= n
        if self.budget < 0:
            raise ValueError("its string tables are referenced far more often than any linker writes "
                             "(overlapping names)")

    def cstr(self, strtab: tuple[int, int], offset: int, limit: int = MAX_DYNAMIC_STRING) -> str:
        base, size = strtab
        if offset >= size:
            raise ValueError(f"string offset {offset} outside the string table")
        start = base + offset
        stop = min(base + size, start + limit + 1)
        end = self.mm.find(b"\0", start, stop)
        if end < 0:
            if stop < base + size:
                raise ValueError(f"a string at offset {offset} is longer than {limit} bytes")
            raise ValueError("unterminated string in the string table")
        self.charge(end - start + 1)
        return self.mm[start:end].decode("utf-8", "replace")


class _Sections:
    """Section headers by type."""

    def __init__(self, mm: mmap.mmap, hdr: Any, elf_class: int, order: str, size: int) -> None:
        fmt = order + ("IIQQQQIIQQ" if elf_class == 64 else "IIIIIIIIII")
        entsize = struct.calcsize(fmt)
        if hdr["e_shoff"] and hdr["e_shnum"] and hdr["e_shentsize"] != entsize:
            raise ValueError(f"unexpected section header size {hdr['e_shentsize']}")
        self.headers: list[_Shdr] = []
        self.by_type: dict[int, _Shdr] = {}
        self.file_size = size
        base = hdr["e_shoff"]
        for i in range(hdr["e_shnum"] if base else 0):
            fields = struct.unpack_from(fmt, mm, base + i * entsize)
            sh_type, off, sz, link, inf = fields[1], fields[4], fields[5], fields[6], fields[7]
            sec = _Shdr(sh_type, off, sz, link, inf)
            self.headers.append(sec)
            if sh_type != _SHT_NOBITS and off + sz > size:
                if sh_type in (_SHT_DYNSYM, _SHT_DYNAMIC, _SHT_GNU_VERSYM, _SHT_GNU_VERNEED,
                               _SHT_GNU_VERDEF, _SHT_STRTAB):
                    raise ValueError(f"section {i} (type {sh_type:#x}) runs past the end of the file")
                continue
            self.by_type.setdefault(sh_type, sec)


_ELF_TYPES = {0: "NONE", 1: "REL", 2: "EXEC", 3: "DYN", 4: "CORE"}
_HEADER_FIELDS = ("e_type", "e_machine", "e_version", "e_entry", "e_phoff", "e_shoff", "e_flags", "e_ehsize",
                  "e_phentsize", "e_phnum", "e_shentsize", "e_shnum", "e_shstrndx")


def _read(p: Path, head: bytes, img: _Image, symbols: bool, skip_cxx: bool, side: str | None) -> ElfInfo:
    mm, size = img.mm, img.size
    elf_class = 64 if head[4] == 2 else 32
    little = head[5] == 1
    order = "<" if little else ">"
    hdr = dict(zip(_HEADER_FIELDS, struct.unpack_from(
        order + ("HHIQQQIHHHHHH" if elf_class == 64 else "HHIIIIIHHHHHH"), head, 16), strict=True))
    phentsize = 56 if elf_class == 64 else 32
    if hdr["e_phoff"] and hdr["e_phnum"] and hdr["e_phentsize"] != phentsize:
        raise ValueError(f"unexpected program header size {hdr['e_phentsize']}")
    if hdr["e_shoff"] + hdr["e_shnum"] * hdr["e_shentsize"] > size or hdr["e_phoff"] + hdr[
        "e_phnum"
    ] * hdr["e_phentsize"] > size:
        raise ValueError("section or program headers run past the end of the file")
    machine = _MACHINE_NUMBERS.get(hdr["e_machine"], f"em{hdr['e_machine']}")
    info = ElfInfo(
        path=str(p),
        elf_class=elf_class,
        machine=machine,
        elf_type=_ELF_TYPES.get(hdr["e_type"], str(hdr["e_type"])),
        symbols_read=symbols,
    )
    segments = _program_headers(mm, hdr, elf_class, order)
    for ptype, off, filesz, _vaddr in segments:
        if ptype == _PT_INTERP and off + filesz <= size:
            info.interpreter = mm[off: off + filesz].split(b"\0", 1)[0].decode("utf-8", "replace")
    sections = _Sections(mm, hdr, elf_class, order, size)
    dyn_fmt = order + ("qQ" if elf_class == 64 else "iI")
    dyn_sec = sections.by_type.get(_SHT_DYNAMIC)
    if dyn_sec is not None:
        strtab = _strtab_of(sections, _SHT_DYNAMIC)
        if strtab is None:
            raise ValueError("the dynamic section has no string table")
        raw = mm[dyn_sec.offset: dyn_sec.offset + dyn_sec.size]
        usable = len(raw) - len(raw) % struct.calcsize(dyn_fmt)
        _apply_dynamic(list(struct.iter_unpack(dyn_fmt, raw[:usable])), img, strtab, info)
    else:
        _read_dynamic_segment(img, segments, dyn_fmt, info)
    strtab = _strtab_of(sections, _SHT_GNU_VERNEED)
    need_index: dict[int, tuple[str, str]] = {}
    def_index: dict[int, str] = {}
    verneed = sections.by_type.get(_SHT_GNU_VERNEED)
    if verneed is not None and strtab is not None:
        need_index = _read_verneed(img, verneed, strtab, order, info)
    verdef = sections.by_type.get(_SHT_GNU_VERDEF)
    def_strtab = _strtab_of(sections, _SHT_GNU_VERDEF)
    if verdef is not None and def_strtab is not None:
        def_index = _read_verdef(img, verdef, def_strtab, order, info)
    if symbols:
        dynsym = sections.by_type.get(_SHT_DYNSYM)
        sym_strtab = _strtab_of(sections, _SHT_DYNSYM)
        if dynsym is not None and sym_strtab is not None:
            _read_dynsym(img, dynsym, sym_strtab, sections.by_type.get(_SHT_GNU_VERSYM), elf_class, little,
                         need_index, def_index, info, skip_cxx, side)
    return info


def _program_headers(mm: mmap.mmap, hdr: Any, elf_class: int, order: str) -> list[tuple[int, int, int, int]]:
    """(p_type, p_offset, p_filesz, p_vaddr) of every program header."""
    out = []
    base = hdr["e_phoff"]
    for i in range(hdr["e_phnum"] if base else 0):
        if elf_class == 64:
            ptype, _fl, off, vaddr, _pa, filesz, _ms, _al = struct.unpack_from(order + "IIQQQQQQ", mm,
                                                                                 base + i * 56)
        else:
            ptype, off, vaddr, _pa, filesz, _ms, _fl, _al = struct.unpack_from(order + "8I", mm,
                                                                                base + i * 32)
        out.append((ptype, off, filesz, vaddr))
    return out


def _apply_dynamic(tags: list[tuple[int, int]], img: _Image, strtab: tuple[int, int],
                   info: ElfInfo) -> None:
    for tag, val in tags:
        if tag == 0:
            break
        if tag == _DT_NEEDED:
            info.needed.append(img.cstr(strtab, val))
        elif tag == _DT_SONAME:
            info.soname = img.cstr(strtab, val)
        elif tag == _DT_RPATH:
            info.rpath.extend(img.cstr(strtab, val).split(":"))
        elif tag == _DT_RUNPATH:
            info.runpath.extend(img.cstr(strtab, val).split(":"))
        elif tag == _DT_FLAGS_1:
            info.nodeflib = bool(val & _DF_1_NODEFLIB)
        elif tag == _DT_VERSYM:
            info.has_versym = True


def _read_dynamic_segment(img: _Image, segments: list[tuple[int, int, int, int]], fmt: str,
                          info: ElfInfo) -> None:
    """No section headers (e.g. sstrip'd): walk PT_DYNAMIC, map DT_STRTAB through PT_LOAD."""
    mm, size = img.mm, img.size
    dyn = next((s for s in segments if s[0] == _PT_DYNAMIC), None)
    if dyn is None:
        return
    entsize = struct.calcsize(fmt)
    _t, off, filesz, _v = dyn
    if off + filesz > size:
        raise ValueError("the dynamic segment runs past the end of the file")
    tags = list(struct.iter_unpack(fmt, mm[off: off + filesz - filesz % entsize]))
    values = dict(tags)
    strtab_addr, strsz = values.get(_DT_STRTAB), values.get(_DT_STRSZ)
    if strtab_addr is None or strsz is None:
        return
    for ptype, poff, pfilesz, vaddr in segments:
        if ptype == _PT_LOAD and vaddr <= strtab_addr < vaddr + pfilesz:
            strtab_off = strtab_addr - vaddr + poff
            break
    else:
        raise ValueError("DT_STRTAB points outside every loadable segment")
    if strtab_off + strsz > size:
        raise ValueError("the dynamic string table runs past the end of the file")
    _apply_dynamic(tags, img, (strtab_off, strsz), info)


def _strtab_of(sections: _Sections, sh_type: int) -> tuple[int, int] | None:
    """(offset, size) of the string table a section links to."""
    sec = sections.by_type.get(sh_type)
    if sec is None or sec.link >= len(sections.headers):
        return None
    link = sections.headers[sec.link]
    if link.offset + link.size > sections.file_size:
        raise ValueError(f"the string table of section type {sh_type:#x} runs past the end of the file")
    return link.offset, link.size


_VERNEED_SIZE = _VERNAUX_SIZE = 16
_VERDEF_SIZE, _VERDAUX_SIZE = 20, 8


class _Walk:
    """Entries of one versioning section: each inside it, and together a bounded multiple of it.

    Linkers rarely share entries (NVIDIA's libcudart lets two version definitions share one
    name entry), so the bytes of the entries read may add up to ``factor`` times the section,
    no more: a chain shared by thousands of entries, or overlapping entries, stop the walk
    after a few sections' worth instead of running for minutes.
    """

    def __init__(self, sec: _Shdr, what: str, factor: int = 1) -> None:
        self.start, self.end, self.what = sec.offset, sec.offset + sec.size, what
        self.left = sec.size * factor

    def take(self, off: int, size: int) -> None:
        if off < self.start or off + size > self.end:
            raise ValueError(f"{self.what} run past their section")
        self.left -= size
        if self.left < 0:
            raise ValueError(f"{self.what} overlap or are linked more than once")

    @staticmethod
    def step(link: int, size: int, what: str) -> int:
        if 0 < link < size:
            raise ValueError(f"{what} are linked {link} bytes apart, less than one entry")
        return link


def _read_verneed(img: _Image, sec: _Shdr, strtab: tuple[int, int], order: str,
                  info: ElfInfo) -> dict[int, tuple[str, str]]:
    """Version needs: fills info.version_needs; returns version index -> (version, file)."""
    mm = img.mm
    index: dict[int, tuple[str, str]] = {}
    needs = _Walk(sec, "version needs")
    auxes = _Walk(sec, "version need entries", factor=4)
    off = sec.offset
    for _ in range(min(sec.info or 1 << 16, sec.size // _VERNEED_SIZE)):
        needs.take(off, _VERNEED_SIZE)
        _ver, cnt, vn_file, vn_aux, vn_next = struct.unpack_from(order + "HHIII", mm, off)
        file_name = img.cstr(strtab, vn_file)
        names = info.version_needs.setdefault(file_name, [])
        aux = off + vn_aux
        for _ in range(cnt):
            auxes.take(aux, _VERNAUX_SIZE)
            _hash, flags, other, vna_name, vna_next = struct.unpack_from(order + "IHHII", mm, aux)
            vname = img.cstr(strtab, vna_name)
            names.append(vname)
            if flags & _VER_FLG_WEAK:
                info.version_needs_weak.setdefault(file_name, []).append(vname)
            index[other & 0x7FFF] = (vname, file_name)
            if not _Walk.step(vna_next, _VERNAUX_SIZE, "version need entries"):
                break
            aux += vna_next
        if not _Walk.step(vn_next, _VERNEED_SIZE, "version needs"):
            break
        off += vn_next
    return index


def _read_verdef(img: _Image, sec: _Shdr, strtab: tuple[int, int], order: str,
                 info: ElfInfo) -> dict[int, str]:
    """Version definitions: fills info.version_defs/version_base; returns index -> name."""
    mm = img.mm
    index: dict[int, str] = {}
    defs = _Walk(sec, "version definitions")
    names = _Walk(sec, "version definition names", factor=1 << 30)  # shared names cost nothing extra
    off = sec.offset
    for _ in range(min(sec.info or 1 << 16, sec.size // _VERDEF_SIZE)):
        defs.take(off, _VERDEF_SIZE)
        _ver, flags, ndx, cnt, _hash, vd_aux, vd_next = struct.unpack_from(order + "HHHHIII", mm, off)
        if cnt:
            names.take(off + vd_aux, _VERDAUX_SIZE)
            (vda_name,) = struct.unpack_from(order + "I", mm, off + vd_aux)
            name = img.cstr(strtab, vda_name)
            index[ndx & 0x7FFF] = name
            if flags & _VER_FLG_BASE:
                info.version_base = name
            else:
                info.version_defs.append(name)
        if not _Walk.step(vd_next, _VERDEF_SIZE, "version definitions"):
            break
        off += vd_next
    return index


def _read_dynsym(img: _Image, sec: _Shdr, strtab: tuple[int, int], versym_sec: _Shdr | None, elf_class: int,
                 little: bool, need_index: dict[int, tuple[str, str]], def_index: dict[int, str],
                 info: ElfInfo, skip_cxx: bool = False, side: str | None = None) -> None:
    mm = img.mm
    # 64-bit Elf_Sym: name u32, info u8, other u8, shndx u16, value u64, size u64 (24 bytes)
    # 32-bit Elf_Sym: name u32, value u32, size u32, info u8, other u8, shndx u16 (16 bytes)
    # Columns are cut out with C-level slicing; only kept symbols are touched in Python.
    entsize = 24 if elf_class == 64 else 16
    count = sec.size // entsize
    raw = mm[sec.offset: sec.offset + count * entsize]
    swap = little != (sys.byteorder == "little")
    words = array("I", raw)
    halves = array("H", raw)
    if swap:
        words.byteswap()
        halves.byteswap()
    if elf_class == 64:
        names, infos, shndxs = words[0::6], raw[4::24], halves[3::12]
    else:
        names, infos, shndxs = words[0::4], raw[12::16], halves[7::8]
    if versym_sec is not None and versym_sec.size >= 2 * count:
        versyms = array("H", mm[versym_sec.offset: versym_sec.offset + 2 * count])
        if swap:
            versyms.byteswap()
    else:
        versyms = array("H", bytes(2 * count))
    str_base, str_size = strtab
    str_end = str_base + str_size
    find = mm.find
    imports: list[ElfSymbol] = []
    exports: list[ElfSymbol] = []
    selected, cxx = select_symbols(mm, raw, elf_class, names, infos, strtab, skip_cxx, side)
    budget = img.budget
    for i in itertools.compress(range(count), selected):  # only the selected symbols, in Python
        st_name = names[i]
        if not st_name or i == 0:
            continue
        vs = versyms[i]
        idx = vs & 0x7FFF
        if cxx[i] and (idx <= 1 or idx not in need_index):
            continue  # an unversioned C++ import (C++ exports are not selected)
        if st_name >= str_size:
            raise ValueError(f"symbol {i} names offset {st_name} outside .dynstr")
        start = str_base + st_name
        end = find(b"\0", start, min(str_end, start + MAX_SYMBOL_NAME + 1))
        if end < 0:
            raise ValueError(f"symbol {i} has an unterminated name or one over {MAX_SYMBOL_NAME} bytes")
        budget -= end - start + 1
        if budget < 0:
            img.charge(img.budget + 1)  # raises: names overlap far more than any linker shares them
        name = mm[start:end].decode("utf-8", "replace")
        weak = infos[i] >> 4 == _STB_WEAK
        if shndxs[i] == 0:
            need = need_index.get(idx) if idx > 1 else None
            if need is not None:
                imports.append(ElfSymbol(name, need[0], need[1], weak))
            else:
                imports.append(ElfSymbol(name, None, None, weak))
        else:
            version = def_index.get(idx) if idx > 1 else None
            exports.append(ElfSymbol(name, version, None, weak, vs > 0x7FFF and version is not None))
    img.budget = budget
    info.imports = imports
    info.exports = exports
