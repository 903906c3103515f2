"""Read what a Windows PE file (DLL/EXE) asks of the loader, with pefile.

Only the data directories we need are parsed (imports, delay-load imports,
exports, resources for the version block), so a large DLL is not walked whole.

pefile is lenient: an import descriptor it cannot read is dropped with a
warning, and an import directory outside the file reads as "imports nothing".
For us a damaged table is an error (a DLL reported as needing nothing would be
planned as needing no shim), so the descriptors are also counted here, straight
from the file, and every one must have come through pefile with its DLL name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pefile

from zluda_runner.core.errors import BinaryFormatError
from zluda_runner.core.serial import JsonMixin

_MACHINES = {
    0x8664: "AMD64",
    0x014C: "I386",
    0xAA64: "ARM64",
    0x01C4: "ARMNT",
    0x0200: "IA64",
}

_IMPORT_DIRECTORIES = [
    pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
    pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"],
    pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_RESOURCE"],
]
_EXPORT_DIRECTORY = pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"]

_IMAGE_FILE_DLL = 0x2000

_IMPORT = pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"]
_DELAY_IMPORT = pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"]
#: descriptor sizes and the offset of the DLL-name RVA in each
_DESCRIPTORS = {_IMPORT: (20, 12, "import"), _DELAY_IMPORT: (32, 4, "delay-load import")}
#: more DLLs than any real file imports from (torch_cuda.dll: ~40)
MAX_IMPORTED_DLLS = 4096

#: pefile stops reading a file's imports after 8192 symbols in all (MAX_IMPORT_SYMBOLS) and calls the
#: rest a damaged table; PyPI's Windows torch_python.dll imports more than that from torch_cpu.dll
#: alone (C++ symbols). The bound stays, far above any real file.
MAX_IMPORT_SYMBOLS = 1 << 20
if pefile.MAX_IMPORT_SYMBOLS < MAX_IMPORT_SYMBOLS:
    pefile.MAX_IMPORT_SYMBOLS = MAX_IMPORT_SYMBOLS

#: bump when PeInfo's content or meaning changes (invalidates the per-file cache)
READER_VERSION = 3

ImportList = list[str | int]


@dataclass
class PeInfo(JsonMixin):
    """The loader-facing facts of one PE file.

    ``imports``/``delay_imports`` map a DLL name (as written in the file) to the
    names it imports from it, or the ordinal (an int) for by-ordinal imports.
    ``exports`` are the exported names; ``export_ordinals`` the ordinals of
    exports that have no name; ``forwarders`` maps a name to ``"DLL.func"``.
    """

    path: str
    machine: str
    is_dll: bool
    imports: dict[str, ImportList] = field(default_factory=dict)
    delay_imports: dict[str, ImportList] = field(default_factory=dict)
    exports: list[str] = field(default_factory=list)
    export_ordinals: list[int] = field(default_factory=list)
    forwarders: dict[str, str] = field(default_factory=dict)
    dll_name: str | None = None
    file_version: str | None = None
    product_version: str | None = None
    #: False when the export table was not read (``read_pe(..., exports=False)``)
    exports_read: bool = True

    @property
    def needed(self) -> list[str]:
        """Every DLL this file names: normal imports first, then delay-load ones."""
        seen: dict[str, None] = {}
        for name in [*self.imports, *self.delay_imports]:
            seen.setdefault(name, None)
        return list(seen)


def is_pe(path: Path | str) -> bool:
    """True if the file starts with ``MZ`` and its ``e_lfanew`` points at ``PE\\0\\0``."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            if len(head) < 64 or head[:2] != b"MZ":
                return False
            offset = int.from_bytes(head[60:64], "little")
            fh.seek(offset)
            return fh.read(4) == b"PE\0\0"
    except OSError:
        return False


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("ascii", errors="replace")
    return value


def _import_table(entries: list[Any]) -> dict[str, ImportList]:  # pefile's ImportDescData (no stubs)
    table: dict[str, ImportList] = {}
    for entry in entries:
        dll = _text(entry.dll) or "?"
        names = table.setdefault(dll, [])
        for imp in entry.imports:
            name = _text(imp.name)
            names.append(name if name is not None else int(imp.ordinal))
    return table


def _fixed_version(ms: int, ls: int) -> str:
    return f"{ms >> 16}.{ms & 0xFFFF}.{ls >> 16}.{ls & 0xFFFF}"


def _versions(pe: pefile.PE) -> tuple[str | None, str | None]:
    """File and product version: the StringFileInfo text if present, else VS_FIXEDFILEINFO."""
    strings: dict[str, str] = {}
    for info in getattr(pe, "FileInfo", None) or []:
        for block in info:
            for table in getattr(block, "StringTable", []) or []:
                for key, value in table.entries.items():
                    strings.setdefault(_text(key) or "", _text(value) or "")
    file_version = strings.get("FileVersion") or None
    product_version = strings.get("ProductVersion") or None
    fixed = getattr(pe, "VS_FIXEDFILEINFO", None)
    if fixed:
        ffi = fixed[0]
        if file_version is None:
            file_version = _fixed_version(ffi.FileVersionMS, ffi.FileVersionLS)
        if product_version is None:
            product_version = _fixed_version(ffi.ProductVersionMS, ffi.ProductVersionLS)
    return file_version, product_version


def read_pe(path: Path | str, *, exports: bool = True) -> PeInfo:
    """Parse ``path`` as a PE file; :class:`BinaryFormatError` if it is not one or is damaged.

    ``exports=False`` skips the export directory (torch_cpu.dll exports ~100k names);
    ``exports``, ``export_ordinals``, ``forwarders`` and ``dll_name`` are then left empty.
    """
    p = Path(path)
    if not p.is_file():
        raise BinaryFormatError(f"{p} does not exist or is not a file", hint="check the path")
    if not is_pe(p):
        raise BinaryFormatError(
            f"{p} is not a PE (Windows DLL/EXE) file",
            hint="pass a .dll/.exe built for Windows, or an ELF file on Linux",
        )
    try:
        pe = pefile.PE(str(p), fast_load=True)
    except (pefile.PEFormatError, OSError, ValueError) as exc:
        raise BinaryFormatError(
            f"{p} is a damaged PE file: {exc}",
            hint="the file is truncated or corrupt; reinstall the package it came from",
        ) from exc
    try:
        size = p.stat().st_size
        last = max((s.PointerToRawData + s.SizeOfRawData for s in pe.sections), default=0)
        if last > size:
            raise BinaryFormatError(
                f"{p} is truncated: its sections end at byte {last}, the file has {size}",
                hint="the download or copy was cut short; reinstall the package it came from",
            )
        try:
            pe.parse_data_directories(
                directories=[*_IMPORT_DIRECTORIES, *([_EXPORT_DIRECTORY] if exports else [])]
            )
        except (pefile.PEFormatError, IndexError, ValueError, AttributeError) as exc:
            raise BinaryFormatError(
                f"{p}: its import/export tables cannot be read: {exc}",
                hint="the file is corrupt; reinstall the package it came from",
            ) from exc
        _check_import_tables(p, pe, size)
        machine_id = pe.FILE_HEADER.Machine
        export_dir = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
        export_names: list[str] = []
        export_ordinals: list[int] = []
        forwarders: dict[str, str] = {}
        dll_name = None
        if export_dir is not None:
            dll_name = _text(getattr(export_dir, "name", None))
            for sym in export_dir.symbols:
                name = _text(sym.name)
                if name is None:
                    export_ordinals.append(int(sym.ordinal))
                    continue
                export_names.append(name)
                if sym.forwarder:
                    forwarders[name] = _text(sym.forwarder) or ""
        file_version, product_version = _versions(pe)
        return PeInfo(
            path=str(p),
            machine=_MACHINES.get(machine_id, f"0x{machine_id:04x}"),
            is_dll=bool(pe.FILE_HEADER.Characteristics & _IMAGE_FILE_DLL),
            imports=_import_table(getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])),
            delay_imports=_import_table(getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", [])),
            exports=export_names,
            export_ordinals=export_ordinals,
            forwarders=forwarders,
            dll_name=dll_name,
            file_version=file_version,
            product_version=product_version,
            exports_read=exports,
        )
    finally:
        pe.close()


read_pe.cache_version = READER_VERSION  # type: ignore[attr-defined]


def _check_import_tables(p: Path, pe: pefile.PE, size: int) -> None:
    """Every import descriptor in the file must have been read by pefile (see the module doc)."""
    for index, (entry_size, name_at, what) in _DESCRIPTORS.items():
        directory = pe.OPTIONAL_HEADER.DATA_DIRECTORY[index]
        if not directory.VirtualAddress:
            continue
        parsed = getattr(pe, "DIRECTORY_ENTRY_IMPORT" if index == _IMPORT else "DIRECTORY_ENTRY_DELAY_IMPORT",
                         None) or []
        # the directory's Size counts the all-zero terminator; a smaller Size only shortens our count
        limit = max(0, directory.Size // entry_size - 1) if directory.Size else MAX_IMPORTED_DLLS
        in_file = _count_descriptors(pe, directory.VirtualAddress, entry_size, name_at, size,
                                     min(limit, MAX_IMPORTED_DLLS))
        if in_file is None:
            raise BinaryFormatError(
                f"{p} is a damaged PE file: its {what} table (RVA {directory.VirtualAddress:#x}) lies "
                "outside the file or is not terminated",
                hint="the file is corrupt; reinstall the package it came from",
            )
        read = [e for e in parsed if getattr(e, "dll", None)]
        if len(read) < in_file:
            raise BinaryFormatError(
                f"{p} is a damaged PE file: its {what} table has {in_file} DLL entries but only {len(read)} "
                "can be read (a name or thunk table points outside the file)",
                hint="the file is corrupt; reinstall the package it came from",
            )


def _count_descriptors(pe: pefile.PE, rva: int, entry_size: int, name_at: int, size: int,
                       limit: int) -> int | None:
    """The descriptors before the all-zero terminator (at most ``limit``), or None when the table
    leaves the file."""
    try:
        offset = pe.get_offset_from_rva(rva)
    except pefile.PEFormatError:
        return None
    if offset is None or offset < 0:
        return None
    data = pe.__data__
    for count in range(limit + 1):
        if count == limit:
            return count
        start = offset + count * entry_size
        if start + entry_size > size:
            return None
        entry = bytes(data[start: start + entry_size])
        if not any(entry):
            return count
        if not int.from_bytes(entry[name_at: name_at + 4], "little"):  # pefile also ends at a nameless entry
            return count
    return None  # pragma: no cover - the loop returns at ``limit``
