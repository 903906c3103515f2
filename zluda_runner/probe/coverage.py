"""Which driver API symbols a library exports, against the packaged reference list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zluda_runner.data.driver_api import driver_api
from zluda_runner.probe.model import SymbolCoverage


def exported_functions(path: Path) -> set[str]:
    """Defined dynamic symbols of an ELF file, or exports of a PE (``nvcuda.dll``)."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic == b"\x7fELF":
        from elftools.elf.elffile import ELFFile

        with open(path, "rb") as fh:
            elf = ELFFile(fh)
            dynsym: Any = elf.get_section_by_name(".dynsym")
            if dynsym is None:
                return set()
            return {
                s.name
                for s in dynsym.iter_symbols()
                if s.name
                and s["st_shndx"] != "SHN_UNDEF"
                and s["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC")
            }
    if magic[:2] == b"MZ":
        import pefile

        pe = pefile.PE(str(path), fast_load=True)
        pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"]])
        exports = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
        return {e.name.decode() for e in exports.symbols if e.name} if exports else set()
    raise ValueError("neither an ELF nor a PE file")


def symbol_coverage(path: Path) -> SymbolCoverage:
    reference = set(driver_api().symbols)
    try:
        exported = exported_functions(Path(path))
    except (OSError, ValueError) as exc:
        return SymbolCoverage(reference=len(reference), error=f"cannot read exports of {path}: {exc}")
    except Exception as exc:  # pyelftools/pefile raise their own errors on damaged files
        return SymbolCoverage(reference=len(reference), error=f"cannot read exports of {path}: {exc}")
    driver_like = {n for n in exported if n.startswith("cu")}
    return SymbolCoverage(
        reference=len(reference),
        exported=len(driver_like),
        present=len(reference & driver_like),
        missing=sorted(reference - driver_like),
        extra=sorted(driver_like - reference),
    )
