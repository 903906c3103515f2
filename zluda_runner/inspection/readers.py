"""ELF/PE readers for inspection, through the per-file cache: one entry per file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zluda_runner.binfmt.elf import ElfInfo, read_elf
from zluda_runner.binfmt.filecache import FileCache, Stamp
from zluda_runner.binfmt.pe import PeInfo, read_pe
from zluda_runner.core.paths import CachePaths
from zluda_runner.core.serial import JsonMixin

#: bump when what an ELF entry holds changes (with the ELF reader's own version)
ELF_ENTRY_VERSION = (getattr(read_elf, "cache_version", 0), 3)
PE_ENTRY_VERSION = getattr(read_pe, "cache_version", 0)


@dataclass
class SymbolSummary(JsonMixin):
    """The imports of an ELF file inspection uses, small enough to cache and reload fast.

    ``imports_by_file``: versioned imports per DT_NEEDED file. ``c_imports``: unversioned imports with
    C linkage (not ``_Z``-mangled): CUDA libraries export a C API, and dropping the C++ symbols of
    libtorch keeps an inspection fast.
    """

    imports_by_file: dict[str, list[str]] = field(default_factory=dict)
    c_imports: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"imports_by_file": self.imports_by_file, "c_imports": self.c_imports}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SymbolSummary:
        return cls(dict(data["imports_by_file"]), list(data["c_imports"]))


def summarize_symbols(path: Path | str) -> SymbolSummary:
    """The :class:`SymbolSummary` of the ELF file at ``path`` (exports and C++ names never decoded)."""
    summary = SymbolSummary()
    for sym in read_elf(path, skip_cxx=True, side="imports").imports:
        if sym.file is not None:
            summary.imports_by_file.setdefault(sym.file, []).append(sym.name)
        elif not sym.name.startswith("_Z"):
            summary.c_imports.append(sym.name)
    return summary


def c_exports(path: Path | str) -> list[str]:
    """The exports with C linkage of the ELF file at ``path`` (C++ names never decoded)."""
    return [e.name for e in read_elf(path, skip_cxx=True, side="exports").exports]


@dataclass
class _Entry:
    """What inspection has read of one ELF file: the loader's facts, then each side of its symbols
    when first asked for."""

    stamp: Stamp | None
    info: ElfInfo
    imports: SymbolSummary | None = None
    c_exports: list[str] | None = None

    def record(self) -> dict[str, Any]:
        return {"info": self.info.to_dict(), "c_exports": self.c_exports,
                "imports": self.imports.to_dict() if self.imports is not None else None}


class Readers:
    """ELF/PE readers going through the per-file cache when a cache folder is given; :meth:`flush`
    writes what was read (one cache file per kind, read once here)."""

    def __init__(self, cache_dir: Path | None) -> None:
        folder = CachePaths(cache_dir).inspect if cache_dir is not None else None
        self._elf_cache = FileCache(folder, "elf", f"inspection.elf@{ELF_ENTRY_VERSION}")
        self._pe_cache = FileCache(folder, "pe-imports", f"inspection.pe@{PE_ENTRY_VERSION}")
        self._elf: dict[str, _Entry] = {}
        self._pe: dict[str, PeInfo] = {}

    def _elf_entry(self, path: str) -> _Entry:
        known = self._elf.get(path)
        if known is not None:
            return known
        stamp, record = self._elf_cache.get(path)
        if record is not None:
            try:
                imports = record["imports"]
                known = _Entry(stamp, ElfInfo.from_dict(record["info"]),
                               SymbolSummary.from_dict(imports) if imports is not None else None,
                               list(record["c_exports"]) if record["c_exports"] is not None else None)
            except (ValueError, TypeError, KeyError):
                known = None
        if known is None:
            known = _Entry(stamp, read_elf(path, symbols=False))
            self._elf_cache.put(path, stamp, known.record())
        self._elf[path] = known
        return known

    def elf(self, path: Path | str) -> ElfInfo:
        """Headers, dynamic section and versions, without the symbol table."""
        return self._elf_entry(str(path)).info

    def symbols(self, path: Path | str) -> SymbolSummary:
        """The imports inspection uses (:class:`SymbolSummary`)."""
        entry = self._elf_entry(str(path))
        if entry.imports is None:
            entry.imports = summarize_symbols(path)
            self._elf_cache.put(str(path), entry.stamp, entry.record())
        return entry.imports

    def c_exports(self, path: Path | str) -> list[str]:
        """The exports with C linkage."""
        entry = self._elf_entry(str(path))
        if entry.c_exports is None:
            entry.c_exports = c_exports(path)
            self._elf_cache.put(str(path), entry.stamp, entry.record())
        return entry.c_exports

    def pe(self, path: Path | str) -> PeInfo:
        """Imports, delay imports and version resource, without the export table."""
        key = str(path)
        known = self._pe.get(key)
        if known is not None:
            return known
        stamp, record = self._pe_cache.get(key)
        value: PeInfo | None = None
        if record is not None:
            try:
                value = PeInfo.from_dict(record)
            except (ValueError, TypeError, KeyError):
                value = None
        if value is None:
            value = read_pe(key, exports=False)
            self._pe_cache.put(key, stamp, value.to_dict())
        self._pe[key] = value
        return value

    def flush(self) -> None:
        """Write the entries read since the last flush to the cache (no cache folder: nothing)."""
        self._elf_cache.flush()
        self._pe_cache.flush()
