"""What a shim file offers the loader (class, machine, SONAME, versions, exports) and the checks on it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.serial import JsonMixin

# --------------------------------------------------------------------------- shim checks
from zluda_runner.plan.model import FATAL, OK, WARN, Verdict


@dataclass(frozen=True)
class ShimFacts(JsonMixin):
    """The loader-facing facts of a shim file that the verdicts need."""

    path: str
    elf_class: int | None
    machine: str | None
    soname: str | None
    version_defs: list[str]
    exports: list[str]
    readable: bool = True
    problem: str | None = None
    version_base: str | None = None  # the base version definition (named after the SONAME)
    has_versym: bool = False  # a DT_VERSYM (.gnu.version) table: versioned references bind without a VERDEF
    needed: list[str] = field(default_factory=list)  # its own DT_NEEDED (ROCm)
    provisional: bool = False  # the file is not downloaded yet: nothing about it is known


PROVISIONAL = ("not downloaded yet: its class, SONAME, symbol versions, exports and dependencies are "
               "checked once it is (`zluda-run run` or `zluda-run fetch`)")


def provisional_facts(path: str | Path) -> ShimFacts:
    """:func:`read_shim_facts` for a release that may not be downloaded: a missing file is provisional."""
    if Path(path).exists():
        return read_shim_facts(path)
    return ShimFacts(str(path), None, None, None, [], [], readable=False, problem=PROVISIONAL,
                     provisional=True)


def read_shim_facts(path: str | Path) -> ShimFacts:
    """Facts of one shim file (ELF or PE); unreadable files yield ``readable=False``."""
    p = Path(path)
    if p.name.lower().endswith(".dll"):
        from zluda_runner.binfmt.pe import read_pe

        try:
            pe = read_pe(p)
        except Exception as exc:  # recorded as a fatal verdict, not raised
            return ShimFacts(str(p), None, None, None, [], [], readable=False, problem=str(exc))
        exports = [e for e in pe.exports if isinstance(e, str)]
        return ShimFacts(str(p), 64 if pe.machine == "AMD64" else 32, pe.machine, None, [], exports)
    from zluda_runner.binfmt.elf import read_elf

    try:
        elf = read_elf(p, allow_foreign=True)
    except Exception as exc:
        return ShimFacts(str(p), None, None, None, [], [], readable=False, problem=str(exc))
    defs = list(elf.version_defs)
    exports = [s.name for s in elf.exports]
    return ShimFacts(str(p), elf.elf_class, elf.machine, elf.soname, defs, exports,
                     version_base=elf.version_base, has_versym=elf.has_versym, needed=list(elf.needed))


def check_versions(need_versions: Sequence[str], facts: ShimFacts, need: str) -> tuple[Verdict, list[str]]:
    """A provisional shim (not downloaded) is checked later: OK here, its machine check says so.

    glibc 2.36: a provider without DT_VERDEF passes the load-time version check; at binding, an
    export at index 1 of its DT_VERSYM satisfies a versioned reference. Only a provider with no
    DT_VERSYM at all aborts (check_match), and one whose DT_VERDEF lacks the node stops the load."""
    if facts.provisional or not need_versions:
        return OK, []
    if not facts.version_defs:
        if facts.has_versym:
            return OK, [
                f"the shim defines no version nodes but has a symbol-version table (DT_VERSYM, exports "
                f"global), the Rust cdylib shape: ld.so accepts the versioned references "
                f"({', '.join(need_versions)}) to it"
            ]
        return FATAL, [
            f"the target needs symbol versions {', '.join(need_versions)} from {need}, but the shim has no "
            "symbol-version table at all (no DT_VERSYM): ld.so accepts it at load time, then aborts the "
            "process at the first versioned binding (dl-lookup.c check_match assertion)"
        ]
    missing = [v for v in need_versions if v not in facts.version_defs]
    base_only = [v for v in missing if v == facts.version_base]
    if base_only:
        # The base definition (VER_FLG_BASE, named after the SONAME) passes ld.so's load-time check,
        # but no symbol is defined in it: each binding fails when first resolved.
        return FATAL, [
            f"version {', '.join(base_only)} is only the shim's base version (its SONAME); no symbol is "
            f"defined in it (the shim defines {', '.join(facts.version_defs[:6])}): the load passes, then "
            f"every binding fails with \"undefined symbol: ..., version {base_only[0]}\""
        ]
    if missing:
        return FATAL, [
            f"version {', '.join(missing)} not defined by the shim (it defines "
            f"{', '.join(facts.version_defs[:6])}): ld.so stops with \"version `{missing[0]}' not found\""
        ]
    return OK, [f"defines the needed version node(s) {', '.join(need_versions)}"]


def check_symbols(
    symbols: Sequence[str], facts: ShimFacts, os_name: str = "linux"
) -> tuple[Verdict, list[str]]:
    if facts.provisional or not symbols:
        return OK, []
    exported = set(facts.exports)
    absent = sorted(s for s in symbols if s not in exported)
    if not absent:
        return OK, [f"exports all {len(symbols)} symbol(s) the target imports from it"]
    shown = ", ".join(absent[:5]) + (" ..." if len(absent) > 5 else "")
    if os_name == "windows":
        then = ("Windows refuses to load a DLL that imports one ('The specified procedure could not be "
                "found', error 127); a delay-load import fails at its first call")
    else:
        then = "the process dies with 'undefined symbol' when one is first called"
    return WARN, [
        f"{len(absent)} of {len(symbols)} symbol(s) the target imports are not exported by the shim "
        f"({shown}): {then}"
    ]


def check_machine(facts: ShimFacts, os_name: str) -> tuple[Verdict, list[str]]:
    if facts.provisional:
        return WARN, [f"provisional: {facts.problem}"]
    if not facts.readable:
        return FATAL, [f"the shim cannot be read: {facts.problem}"]
    if os_name == "linux" and (facts.elf_class != 64 or facts.machine != "x86_64"):
        return FATAL, [f"the shim is {facts.elf_class}-bit {facts.machine}; the target is 64-bit x86_64"]
    if os_name == "windows" and facts.machine != "AMD64":
        return FATAL, [f"the shim is built for {facts.machine}; the target is AMD64"]
    return OK, []


