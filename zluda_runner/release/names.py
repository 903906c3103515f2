"""Archive member names: what a release's file may be called on every file system it is installed on,
and how a message shows a name (bounded: an absurd name never floods the terminal).

The checks :mod:`zluda_runner.release.unpack` runs on every member before anything is written: a clean
relative name (no absolute path, drive letter or ``..``), no component over :data:`MAX_NAME_PART` bytes,
no name over :data:`MAX_NAME_BYTES` bytes or :data:`MAX_DEPTH` folders deep, nothing Windows cannot
create as named, and no two names that differ only by case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from zluda_runner.core.errors import ArchiveError, UnsafeArchiveError

#: the longest name component any common file system takes (ext4, NTFS, APFS: 255 bytes / UTF-16 units)
MAX_NAME_PART = 255
#: a member's whole relative name; ZLUDA's are under 60 characters
MAX_NAME_BYTES = 1024
MAX_DEPTH = 32
#: how much of a member name (or a path) a message shows
SHOWN_NAME = 100
DRIVE = re.compile(r"^[A-Za-z]:")


class UnusableArchiveError(ArchiveError):
    """An archive that is whole and safe but cannot be unpacked as a release: a name too long for the
    file system, two names only the case tells apart. Downloading it again does not help."""


def shown(text: str, limit: int = SHOWN_NAME) -> str:
    """``text`` as a message shows it: whole when short, else its start and end around an ellipsis
    (the end holds the file name), with how long it was."""
    return shortened(text, limit) + (f" ({len(text)} characters)" if len(text) > limit else "")


def shortened(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = max(limit - 1, 2)
    head, tail = keep - keep // 3, keep // 3
    return f"{text[:head]}\u2026{text[len(text) - tail:]}"


def quoted(text: str | None) -> str:
    """A member name quoted for a message, bounded (see :func:`shown`)."""
    text = text or ""
    more = f" ({len(text)} characters)" if len(text) > SHOWN_NAME else ""
    return repr(shortened(text, SHOWN_NAME)) + more


UNUSABLE_HINT = (
    "This archive is not a release that can be installed: report it to whoever published it (or to the "
    "manifest's maintainers), and pick another release with {opt:release VERSION} (see {cmd:releases})."
)


UNSAFE_HINT = (
    "Do not use this archive: download the release from its official URL (or a trusted mirror) "
    "and check its SHA-256."
)


def clean_name(archive: Path, raw: str) -> str | None:
    """A safe relative POSIX name, or None for the archive root itself."""
    if "\x00" in raw:
        raise UnsafeArchiveError(f"{archive.name}: member name {quoted(raw)} holds a NUL byte.",
                                 hint=UNSAFE_HINT)
    text = raw.replace("\\", "/")
    if text.startswith("/") or DRIVE.match(text):
        raise UnsafeArchiveError(
            f"{archive.name}: member {quoted(raw)} has an absolute path; extracting it would write outside "
            "the release folder, so the archive was refused and nothing was written.",
            hint=UNSAFE_HINT,
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchiveError(
            f"{archive.name}: member {quoted(raw)} climbs out with '..'; extracting it would write outside "
            "the release folder, so the archive was refused and nothing was written.",
            hint=UNSAFE_HINT,
        )
    return "/".join(parts) if parts else None


def check_name_fits(archive: Path, name: str) -> None:
    """Refuse a name no file system could take (or no release would have), before anything is written."""
    parts = name.split("/")
    size = len(name.encode("utf-8", "replace"))
    long_part = next((p for p in parts if len(p.encode("utf-8", "replace")) > MAX_NAME_PART), None)
    if long_part is not None:
        reason = (f"a name part of {len(long_part.encode('utf-8', 'replace'))} bytes, and file systems "
                  f"take at most {MAX_NAME_PART}")
    elif size > MAX_NAME_BYTES:
        reason = f"a name of {size} bytes, over the {MAX_NAME_BYTES} a release's file may have"
    elif len(parts) > MAX_DEPTH:
        reason = f"a name {len(parts)} folders deep, over the {MAX_DEPTH} a release's file may be"
    else:
        fault = next((r for r in map(_windows_fault, parts) if r is not None), None)
        if fault is None:
            return
        raise UnusableArchiveError(
            f"{archive.name}: member {quoted(name)} has {fault}: it cannot be unpacked the same on Windows; "
            "the archive was refused and nothing was written.",
            hint=UNUSABLE_HINT,
        )
    raise UnusableArchiveError(
        f"{archive.name}: member {quoted(name)} has {reason}: it cannot be unpacked; the archive was "
        "refused and nothing was written.",
        hint=UNUSABLE_HINT,
    )


# Windows' rules for a name part (learn.microsoft.com/windows/win32/fileio/naming-a-file, "Naming
# Conventions"): none of <>:"|?* nor the characters 1-31 (":" would name an NTFS stream of another
# file: "nvcuda.dll:x" writes into nvcuda.dll), no trailing period or space (Windows strips them:
# "a." and "a" are one file), and not a device name (CON, CONIN$, CONOUT$, PRN, AUX, NUL, COM0-9,
# LPT0-9, the superscript digits too), also with an extension ("nul.txt").
_WINDOWS_CHARS = frozenset('<>:"|?*') | frozenset(map(chr, range(1, 32)))
_DEVICES = frozenset({"CON", "CONIN$", "CONOUT$", "PRN", "AUX", "NUL",
                      *(f"{dev}{n}" for dev in ("COM", "LPT") for n in "0123456789\u00b9\u00b2\u00b3")})


def _windows_fault(part: str) -> str | None:
    """Why Windows cannot create ``part`` as it is named, or None."""
    bad = next((c for c in part if c in _WINDOWS_CHARS), None)
    if bad is not None:
        return f"the character {bad!r}, which Windows does not allow in a name"
    if part.endswith((".", " ")):
        return "a name part ending in a period or a space, which Windows drops"
    if part.split(".", 1)[0].rstrip(" ").upper() in _DEVICES:
        return f"a name Windows keeps for a device ({part.split('.', 1)[0].upper()})"
    return None


def _case_key(name: str) -> str:
    """``name`` as a case-insensitive file system compares it (Windows: each character's simple
    upper case; a character whose upper case is longer stays itself, as NTFS keeps it)."""
    return "".join(up if len(up := c.upper()) == 1 else c for c in name)


def check_case_collisions(archive: Path, names: Iterable[str]) -> None:
    """Refuse two names (or folders of names) that differ only by case: Windows and macOS would keep
    one of them, so the archive would not unpack the same everywhere."""
    seen: dict[str, tuple[str, str]] = {}  # case key -> (the name or folder as written, its member)
    for name in names:
        parts = name.split("/")
        for i in range(1, len(parts) + 1):
            path = "/".join(parts[:i])
            other, member = seen.setdefault(_case_key(path), (path, name))
            if other == path:
                continue
            where = (f"the members {quoted(member)} and {quoted(name)} differ only by case"
                     if (other, path) == (member, name) else
                     f"the members {quoted(member)} and {quoted(name)} lie in the folders "
                     f"{quoted(other)} and {quoted(path)}, which differ only by case")
            raise UnusableArchiveError(
                f"{archive.name}: {where}; on Windows (and macOS) one would overwrite or merge with the "
                "other, so the archive would not unpack the same everywhere. It was refused and nothing "
                "was written.",
                hint=UNUSABLE_HINT,
            )
