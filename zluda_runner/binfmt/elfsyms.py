"""Which dynamic symbols a read reports, decided over whole columns of the symbol table in C.

libtorch_cpu.so has ~75k dynamic symbols; looking at each one in Python costs more than everything
else an inspection reads, so the choice (binding, defined or not, a C++ name or not) is made with
bytes as big integers and a C-level gather of the first two bytes of every name.
"""

from __future__ import annotations

import itertools
import mmap
import operator
from array import array

_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE = 1, 2, 10
_STT_SECTION, _STT_FILE = 3, 4


def select_symbols(mm: mmap.mmap, raw: bytes, elf_class: int, names: array[int], infos: bytes,
               strtab: tuple[int, int], skip_cxx: bool, side: str | None) -> tuple[bytes, bytes]:
    """(a 0/1 byte per symbol: reported, a 0/1 byte per symbol: a C++ name (all 0 unless ``skip_cxx``)),
    computed in C over whole columns: bytes as big integers, and a C-level gather of the first two bytes
    of each name. C++ names are left out of exports only (an import may be kept for its version)."""
    count = len(infos)
    keep = int.from_bytes(infos.translate(_KEEP_INFO), "little")
    if not skip_cxx and side is None:
        return keep.to_bytes(count, "little"), bytes(count)
    lo, hi = (raw[6::24], raw[7::24]) if elf_class == 64 else (raw[14::16], raw[15::16])
    undefined = int.from_bytes(lo.translate(_IS_NUL), "little") & int.from_bytes(
        hi.translate(_IS_NUL), "little")
    ones = int.from_bytes(b"\1" * count, "little")
    if side is not None:
        keep &= undefined if side == "imports" else ones ^ undefined
    cxx = 0
    if skip_cxx and count:
        base, size = strtab
        table = mm[base: base + size] + b"\0\0"
        starts = names if max(names) < size else array("I", map(min, names, itertools.repeat(size)))
        gather = operator.itemgetter(*starts) if count > 1 else (lambda t: (t[starts[0]],))
        first, second = bytes(gather(table)), bytes(gather(table[1:]))
        cxx = int.from_bytes(first.translate(_IS_UNDERSCORE), "little") & int.from_bytes(
            second.translate(_IS_Z), "little")
        keep &= (ones ^ cxx) | undefined
    return keep.to_bytes(count, "little"), cxx.to_bytes(count, "little")


def _keep_table() -> bytes:
    """st_info values of symbols we report: global/weak/unique binding, not a section or file symbol."""
    return bytes(
        (v >> 4) in (_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE) and (v & 0xF) not in (_STT_SECTION, _STT_FILE)
        for v in range(256)
    )


_KEEP_INFO = _keep_table()
_IS_UNDERSCORE = bytes(v == ord("_") for v in range(256))
_IS_Z = bytes(v == ord("Z") for v in range(256))
_IS_NUL = bytes(v == 0 for v in range(256))
