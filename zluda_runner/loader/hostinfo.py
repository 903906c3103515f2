"""What this host's ld.so reads besides the binaries: its search path and hwcap subfolders
(``ld.so --help``, glibc >= 2.33) and ``/etc/ld.so.cache`` (glibc's new format, ``ldconfig -p`` as a
fallback). Used by :class:`zluda_runner.loader.glibc.LoaderEnv`.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
from pathlib import Path

LD_SO_CACHE = "/etc/ld.so.cache"


def interpreter_search_info(interp: str) -> tuple[list[str], list[str]]:
    """(system search dirs, hwcap subdirs) as ``ld.so --help`` prints them (glibc >= 2.33)."""
    if not os.access(interp, os.X_OK):
        return [], []
    from zluda_runner.core.child import run_child  # children only when asked: a launch reads files

    return parse_ld_so_help(run_child([interp, "--help"], timeout=10).stdout)


def parse_ld_so_help(text: str) -> tuple[list[str], list[str]]:
    """Parse ``ld.so --help``: (system search dirs, hwcap subdirs in search order)."""
    dirs: list[str] = []
    hwcaps: list[str] = []
    legacy: list[str] = []
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("Subdirectories of glibc-hwcaps"):
            section = "hwcaps"
            continue
        if stripped.startswith("Legacy HWCAP subdirectories"):
            section = "legacy"
            continue
        if not stripped or not line.startswith("  "):
            if stripped and not line.startswith(" "):
                section = "" if not stripped.startswith("Shared library search path") else "dirs"
            continue
        if section == "dirs" and stripped.endswith("(system search path)"):
            dirs.append(stripped.removesuffix("(system search path)").strip())
        elif section == "hwcaps" and "searched)" in stripped:
            hwcaps.append("glibc-hwcaps/" + stripped.split()[0])
        elif section == "legacy" and "searched)" in stripped:
            legacy.append(stripped.split()[0])
    # glibc puts "tls" outermost and enumerates every subset, largest first
    if "tls" in legacy:
        legacy = ["tls"] + [c for c in legacy if c != "tls"]
    n = len(legacy)
    for mask in range((1 << n) - 1, 0, -1):
        hwcaps.append("/".join(legacy[i] for i in range(n) if mask & (1 << (n - 1 - i))))
    return dirs, hwcaps


_CACHE_NEW_MAGIC = b"glibc-ld.so.cache1.1"
_FLAG_X8664_LIBC6 = 0x0303
_HWCAP_EXTENSION = 1 << 62


def read_ld_so_cache(path: str = LD_SO_CACHE) -> dict[str, str]:
    """x86-64 entries of ld.so.cache (glibc's new format), name -> path; ``ldconfig -p`` as fallback."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return {}
    found = parse_ld_so_cache(data)
    return ldconfig_p() if found is None else found


def parse_ld_so_cache(data: bytes) -> dict[str, str] | None:
    """x86-64 entries of ld.so.cache's bytes (glibc's new format), name -> path; None where the bytes are
    not in that format (``ldconfig -p`` knows the old one)."""
    start = data.find(_CACHE_NEW_MAGIC)
    if start >= 0:
        try:
            return _parse_new_cache(data, start)
        except (struct.error, ValueError):
            pass
    return None


def _parse_new_cache(data: bytes, start: int) -> dict[str, str]:
    nlibs, _len_strings = struct.unpack_from("<II", data, start + 20)
    entries_at = start + 48
    out: dict[str, str] = {}

    def cstr(off: int) -> str:
        at = start + off
        end = data.index(b"\0", at)
        return data[at:end].decode("utf-8", "replace")

    for i in range(nlibs):
        flags, key, value, _osv, hwcap = struct.unpack_from("<iIIIQ", data, entries_at + 24 * i)
        if flags != _FLAG_X8664_LIBC6 or hwcap & _HWCAP_EXTENSION:
            continue
        out.setdefault(cstr(key), cstr(value))
    return out


def ldconfig_p() -> dict[str, str]:
    """The x86-64 libraries ``ldconfig -p`` lists (a child), name -> path."""
    exe = shutil.which("ldconfig") or ("/sbin/ldconfig" if os.path.exists("/sbin/ldconfig") else None)
    if exe is None:
        return {}
    from zluda_runner.core.child import run_child

    out = run_child([exe, "-p"], timeout=10).stdout
    found: dict[str, str] = {}
    for m in re.finditer(r"^\s+(\S+) \(([^)]*)\) => (\S+)$", out, re.MULTILINE):
        if "x86-64" in m.group(2) and "hwcap" not in m.group(2):
            found.setdefault(m.group(1), m.group(3))
    return found
