"""ELF/PE readers for inspection, through the per-file cache."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from zluda_runner.binfmt.elf import ElfInfo, read_elf
from zluda_runner.binfmt.filecache import cached_read
from zluda_runner.binfmt.pe import PeInfo, read_pe
from zluda_runner.core.paths import CachePaths
from zluda_runner.core.serial import JsonMixin

R = TypeVar("R", bound=JsonMixin)

# --------------------------------------------------------------------------- file reading (cached)


def read_elf_dynamic(path: Path | str) -> ElfInfo:
    """:func:`read_elf` without the symbol table (what the loader model needs)."""
    return read_elf(path, symbols=False)


read_elf_dynamic.cache_version = read_elf.cache_version  # type: ignore[attr-defined]


def read_pe_imports(path: Path | str) -> PeInfo:
    """:func:`read_pe` without the export table."""
    return read_pe(path, exports=False)


read_pe_imports.cache_version = read_pe.cache_version  # type: ignore[attr-defined]


@dataclass
class SymbolSummary(JsonMixin):
    """The part of an ELF symbol table inspection uses, small enough to cache and reload fast.

    ``imports_by_file``: versioned imports per DT_NEEDED file. ``c_imports`` / ``c_exports``:
    unversioned imports and all exports with C linkage (not ``_Z``-mangled): CUDA libraries
    export a C API, and dropping the tens of thousands of C++ symbols of libtorch keeps a
    warm inspection fast.
    """

    imports_by_file: dict[str, list[str]] = field(default_factory=dict)
    c_imports: list[str] = field(default_factory=list)
    c_exports: list[str] = field(default_factory=list)


def summarize_symbols(path: Path | str) -> SymbolSummary:
    info = read_elf(path, symbols=True)
    summary = SymbolSummary()
    for sym in info.imports:
        if sym.file is not None:
            summary.imports_by_file.setdefault(sym.file, []).append(sym.name)
        elif not sym.name.startswith("_Z"):
            summary.c_imports.append(sym.name)
    summary.c_exports = [e.name for e in info.exports if not e.name.startswith("_Z")]
    return summary


summarize_symbols.cache_version = (read_elf.cache_version, 1)  # type: ignore[attr-defined]


class Readers:
    """ELF/PE readers going through the per-file cache when a cache folder is given."""

    def __init__(self, cache_dir: Path | None) -> None:
        self.cache_dir = CachePaths(cache_dir).inspect if cache_dir is not None else None
        self._memo: dict[tuple[str, str], JsonMixin] = {}

    def _read(self, path: Path | str, kind: str, reader: Callable[[Path], R], cls: type[R]) -> R:
        key = (str(path), kind)
        known = self._memo.get(key)
        if isinstance(known, cls):
            return known
        value = self._memo[key] = cached_read(Path(path), kind, reader, self.cache_dir, cls)  # None: no cache
        return value

    def elf(self, path: Path | str) -> ElfInfo:
        """Headers, dynamic section and versions, without the symbol table."""
        return self._read(path, "elf-dyn", read_elf_dynamic, ElfInfo)

    def symbols(self, path: Path | str) -> SymbolSummary:
        return self._read(path, "elf-symbols", summarize_symbols, SymbolSummary)

    def pe(self, path: Path | str) -> PeInfo:
        """Imports, delay imports and version resource, without the export table."""
        return self._read(path, "pe-imports", read_pe_imports, PeInfo)
