"""Our ELF reader (binfmt/elf.py: a small exact reader over the mapped file, for speed) reads what
pyelftools, the well-kept general reader, reads -- on NVIDIA's real libraries from PyPI's ``nvidia-*``
wheels (the test environment installs nvidia-cuda-runtime) and on a stand-in built here with a version
script, weak and hidden symbols: the SONAME, DT_NEEDED, the RPATH/RUNPATH, the version needs and
definitions, and which dynamic symbols are exports and which imports."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection

from zluda_runner.binfmt.elf import read_elf


def _nvidia_libraries() -> list[Path]:
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations or []) if spec else []
    return sorted({p for root in roots for p in Path(root).glob("*/lib/lib*.so*") if p.is_file()})


def _by_pyelftools(path: Path) -> dict[str, object]:
    with path.open("rb") as handle:
        elf = ELFFile(handle)
        tags: dict[str, list[object]] = {}
        for tag in elf.get_section_by_name(".dynamic").iter_tags():
            tags.setdefault(tag.entry.d_tag, []).append(tag)
        needs: dict[str, list[str]] = {}
        defs: set[str] = set()
        for section in elf.iter_sections():
            if isinstance(section, GNUVerNeedSection):
                for need, auxes in section.iter_versions():
                    needs[need.name] = sorted(aux.name for aux in auxes)
            if isinstance(section, GNUVerDefSection):
                defs |= {next(auxes).name for _d, auxes in section.iter_versions()}
        exports, imports = set(), set()
        for sym in elf.get_section_by_name(".dynsym").iter_symbols():
            if not sym.name:
                continue
            if sym["st_shndx"] == "SHN_UNDEF":
                imports.add(sym.name)
            elif (sym["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
                  and sym["st_other"]["visibility"] in ("STV_DEFAULT", "STV_PROTECTED")):
                exports.add(sym.name)
        return {
            "soname": next((t.soname for t in tags.get("DT_SONAME", [])), None),  # type: ignore[attr-defined]
            "needed": [t.needed for t in tags.get("DT_NEEDED", [])],  # type: ignore[attr-defined]
            "rpath": [p for t in tags.get("DT_RPATH", []) for p in t.rpath.split(":")],  # type: ignore[attr-defined]
            "runpath": [p for t in tags.get("DT_RUNPATH", []) for p in t.runpath.split(":")],  # type: ignore[attr-defined]
            "version_needs": needs, "version_defs": defs, "exports": exports, "imports": imports,
        }


def _by_us(path: Path) -> dict[str, object]:
    info = read_elf(path)
    return {
        "soname": info.soname, "needed": info.needed, "rpath": info.rpath, "runpath": info.runpath,
        "version_needs": {k: sorted(v) for k, v in info.version_needs.items()},
        "version_defs": set(info.version_defs) | ({info.version_base} if info.version_base else set()),
        "exports": {s.name for s in info.exports}, "imports": {s.name for s in info.imports},
    }


@pytest.mark.parametrize("library", _nvidia_libraries(), ids=lambda p: p.name)
def test_nvidias_libraries_read_the_same(library: Path) -> None:
    assert _by_us(library) == _by_pyelftools(library)


def test_a_versioned_stand_in_with_weak_and_hidden_symbols_reads_the_same(cc_build, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = tmp_path / "shape.c"
    source.write_text(
        "#include <stdio.h>\n"
        "int shape_answer(void) { return puts(\"x\"); }\n"
        "__attribute__((weak)) int shape_weak(void) { return 1; }\n"
        "__attribute__((visibility(\"hidden\"))) int shape_hidden(void) { return 2; }\n"
        "int shape_calls_hidden(void) { return shape_hidden(); }\n")
    script = tmp_path / "shape.map"
    script.write_text("SHAPE_1.0 { global: shape_answer; shape_weak; local: *; };\n"
                      "SHAPE_2.0 { global: shape_calls_hidden; } SHAPE_1.0;\n")
    built = cc_build([source], "libshape.so.1", deps=[script], args=[
        "-Wl,-soname,libshape.so.1", f"-Wl,--version-script={script}", "-Wl,-rpath,$ORIGIN/../lib"])
    ours, theirs = _by_us(built), _by_pyelftools(built)
    assert ours == theirs
    # the hidden one is no export; each version a definition names is an (absolute) dynamic symbol too
    assert ours["exports"] == {"shape_answer", "shape_weak", "shape_calls_hidden", "SHAPE_1.0", "SHAPE_2.0"}
    assert ours["version_defs"] == {"libshape.so.1", "SHAPE_1.0", "SHAPE_2.0"}
