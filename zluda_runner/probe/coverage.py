"""Which driver API symbols a library exports, against the packaged reference list."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.core.errors import BinaryFormatError
from zluda_runner.data.driver_api import driver_api
from zluda_runner.probe.model import SymbolCoverage


def exported_functions(path: Path) -> set[str]:
    """Defined dynamic symbols of an ELF file, or exports of a PE (``nvcuda.dll``), read by the
    bounded readers of :mod:`zluda_runner.binfmt` (:class:`BinaryFormatError` for anything else)."""
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic == b"\x7fELF":
        from zluda_runner.binfmt.elf import read_elf

        return {s.name for s in read_elf(path, allow_foreign=True).exports}
    if magic[:2] == b"MZ":
        from zluda_runner.binfmt.pe import read_pe

        return {e for e in read_pe(path).exports if isinstance(e, str)}
    raise ValueError("neither an ELF nor a PE file")


def symbol_coverage(path: Path) -> SymbolCoverage:
    reference = set(driver_api().symbols)
    try:
        exported = exported_functions(Path(path))
    except (OSError, ValueError, BinaryFormatError) as exc:
        return SymbolCoverage(reference=len(reference), error=f"cannot read exports of {path}: {exc}")
    driver_like = {n for n in exported if n.startswith("cu")}
    return SymbolCoverage(
        reference=len(reference),
        exported=len(driver_like),
        present=len(reference & driver_like),
        missing=tuple(sorted(reference - driver_like)),
        extra=tuple(sorted(driver_like - reference)),
    )
