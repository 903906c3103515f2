"""read_pe against DLLs built by mingw-w64 from tests/fixtures/pe/."""

from __future__ import annotations

from pathlib import Path

import pefile
import pytest

from zluda_runner.binfmt.pe import PeInfo, is_pe, read_pe
from zluda_runner.core.errors import BinaryFormatError


def test_exports_ordinals_and_forwarders(pe_dlls) -> None:
    info = read_pe(pe_dlls.cublas)
    assert info.machine == "AMD64"
    assert info.is_dll
    assert info.dll_name == "cublas64_12.dll"
    assert {"cublasCreate_v2", "cublasDestroy_v2", "cublasSgemm_v2"} <= set(info.exports)
    assert "cublasHiddenByOrdinal" not in info.exports
    assert info.export_ordinals == [7]
    assert info.forwarders == {"cublasSleepForwarded": "KERNEL32.Sleep"}


def test_imports_by_name_and_ordinal_and_delay_load(pe_dlls) -> None:
    info = read_pe(pe_dlls.importer)
    assert sorted(info.imports["cudart64_12.dll"]) == ["cudaFree", "cudaMalloc"]
    cublas = info.imports["cublas64_12.dll"]
    assert "cublasCreate_v2" in cublas and "cublasDestroy_v2" in cublas
    assert 7 in cublas  # imported by ordinal (NONAME export)
    assert info.delay_imports == {"nvrtc64_120_0.dll": ["nvrtcGetErrorString"]}
    assert "nvrtc64_120_0.dll" not in info.imports
    assert info.needed[-1] == "nvrtc64_120_0.dll"
    assert info.exports == ["torch_cuda_init"]


def test_version_resource(pe_dlls) -> None:
    info = read_pe(pe_dlls.cudart)
    assert info.file_version == "6.14.11.12080"
    assert info.product_version == "12.8.90"
    assert read_pe(pe_dlls.cublas).file_version is None


def test_skipping_exports_keeps_imports(pe_dlls) -> None:
    full = read_pe(pe_dlls.importer)
    lean = read_pe(pe_dlls.importer, exports=False)
    assert lean.imports == full.imports and lean.delay_imports == full.delay_imports
    assert lean.exports == [] and not lean.exports_read


def test_json_round_trip(pe_dlls) -> None:
    info = read_pe(pe_dlls.importer)
    again = PeInfo.from_json(info.to_json())
    assert again == info
    assert 7 in again.imports["cublas64_12.dll"]


def test_not_pe(tmp_path: Path, elf_stand_ins) -> None:
    text = tmp_path / "notes.dll"
    text.write_text("not a DLL at all\n" * 10)
    for bad in (text, elf_stand_ins.cublas, tmp_path / "missing.dll"):
        with pytest.raises(BinaryFormatError) as err:
            read_pe(bad)
        assert err.value.hint
    assert not is_pe(text)


def test_truncated(tmp_path: Path, pe_dlls) -> None:
    data = pe_dlls.importer.read_bytes()
    for size in (200, len(data) // 2):
        cut = tmp_path / f"cut{size}.dll"
        cut.write_bytes(data[:size])
        with pytest.raises(BinaryFormatError) as err:
            read_pe(cut)
        assert err.value.hint


def test_other_machine_is_reported(tmp_path: Path, pe_dlls) -> None:
    arm = tmp_path / "arm64.dll"
    pe = pefile.PE(str(pe_dlls.cudart))
    pe.FILE_HEADER.Machine = 0xAA64
    arm.write_bytes(bytes(pe.write()))
    pe.close()
    assert read_pe(arm).machine == "ARM64"


def _damaged(tmp_path: Path, source: Path, name: str, damage) -> Path:
    pe = pefile.PE(str(source))
    damage(pe)
    out = tmp_path / f"{name}.dll"
    out.write_bytes(bytes(pe.write()))
    pe.close()
    return out


def _first_import(field: str, *more: str):
    def damage(pe: pefile.PE) -> None:
        for name in (field, *more):
            setattr(pe.DIRECTORY_ENTRY_IMPORT[0].struct, name, 0x7FFF0000)
    return damage


@pytest.mark.parametrize(
    ("case", "damage", "words"),
    [
        ("import-dir-outside",
         lambda pe: setattr(pe.OPTIONAL_HEADER.DATA_DIRECTORY[1], "VirtualAddress", 0x7FFF0000),
         "import table"),
        ("dll-name-outside", _first_import("Name"), "can be read"),
        ("thunks-outside", _first_import("OriginalFirstThunk", "FirstThunk"), "can be read"),
        ("delay-dir-outside",
         lambda pe: setattr(pe.OPTIONAL_HEADER.DATA_DIRECTORY[13], "VirtualAddress", 0x7FFF0000),
         "delay-load import table"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_corrupt_import_table_is_an_error_not_no_imports(tmp_path: Path, pe_dlls, case, damage,
                                                         words) -> None:
    """pefile drops what it cannot read; a DLL must never be reported as importing less than it does."""
    bad = _damaged(tmp_path, pe_dlls.importer, case, damage)
    with pytest.raises(BinaryFormatError) as err:
        read_pe(bad)
    assert str(bad) in err.value.message and words in err.value.message
    assert "damaged" in err.value.message and err.value.hint


def test_only_the_first_thunk_table_damaged_still_reads(tmp_path: Path, pe_dlls) -> None:
    """The loader itself uses FirstThunk when the lookup table is gone: pefile does too, and so do we."""
    bad = _damaged(tmp_path, pe_dlls.importer, "oft", _first_import("OriginalFirstThunk"))
    assert read_pe(bad).imports == read_pe(pe_dlls.importer).imports



def test_more_imports_than_pefile_reads_by_default(tmp_path: Path) -> None:
    """PyPI's Windows torch_python.dll imports thousands of C++ symbols from torch_cpu.dll: past pefile's
    default bound (8192 symbols in all) its table was called damaged and the DLL skipped by inspection."""
    import os
    import zipfile

    from tests.conftest import require
    from tests.windows.winpy import DOWNLOAD_HINT, TORCH_WHEEL, WIN_WHEELS_ENV

    wheel = Path(os.environ.get(WIN_WHEELS_ENV) or "/nonexistent") / TORCH_WHEEL
    require(wheel.is_file(), DOWNLOAD_HINT)
    dll = tmp_path / "torch_python.dll"
    with zipfile.ZipFile(wheel) as zf:
        dll.write_bytes(zf.read("torch/lib/torch_python.dll"))
    info = read_pe(dll, exports=False)
    assert {"torch_cpu.dll", "c10.dll", "python313.dll", "KERNEL32.dll"} <= set(info.imports)
    assert sum(len(v) for v in info.imports.values()) > 6000
