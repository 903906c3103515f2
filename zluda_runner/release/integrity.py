"""Is an installed release still what was installed?

At install, every file and link of the unpacked tree is recorded in the
completion marker (:class:`~zluda_runner.release.store.FileRecord`: size,
SHA-256, link target, and the file's identity: mtime and inode). Then:

- :func:`quick_check`, on every use (``run``, ``plan``): the tree's entries
  must be exactly those recorded, each file of the recorded size and link of
  the recorded target; a file whose identity (mtime, inode) changed is hashed.
  Costs a ``stat`` per file (a release holds a few dozen) unless something moved.
- :func:`full_check`, on ``fetch`` and for the doctor: every file is hashed.

A mismatch is a :class:`~zluda_runner.core.errors.CacheError` that says what
changed and how to reinstall (:func:`tampered_error`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.errors import CacheError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.hashio import hash_file
from zluda_runner.release.store import FileRecord

MAX_LISTED = 5


@dataclass
class IntegrityReport(JsonMixin):
    """What a check found: ``problems`` is empty when the tree is as installed."""

    release_id: str
    path: Path
    mode: str  # "quick" | "full"
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def inventory(folder: Path) -> list[FileRecord]:
    """Record every file and link under ``folder`` (sorted by path)."""
    records: list[FileRecord] = []
    for rel, path in _entries(folder).items():
        st = path.lstat()
        if path.is_symlink():
            records.append(FileRecord(rel, "symlink", target=os.readlink(path)))
        else:
            sha, size = hash_file(path)
            records.append(FileRecord(rel, "file", size, sha, mtime_ns=st.st_mtime_ns, ino=st.st_ino))
    return records


def quick_check(folder: Path, records: list[FileRecord]) -> list[str]:
    """Problems found by identity (hashing only files whose identity changed)."""
    return _check(folder, records, full=False)


def full_check(folder: Path, records: list[FileRecord]) -> list[str]:
    """Problems found by hashing every file."""
    return _check(folder, records, full=True)


def tampered_error(release_id: str, folder: Path, problems: list[str]) -> CacheError:
    shown = "; ".join(problems[:MAX_LISTED])
    more = f" (and {len(problems) - MAX_LISTED} more)" if len(problems) > MAX_LISTED else ""
    return CacheError(
        f"The cached release {release_id} in {folder} was changed after it was installed: {shown}{more}. "
        "zluda-runner will not use it.",
        hint=f"Reinstall it with {{cmd:fetch {release_id} --reinstall}} (the downloaded archive is "
        f"reused when it is intact), or remove it with {{cmd:cache clean {release_id}}}. If something "
        "keeps changing these files (antivirus, another tool), exclude the cache folder from it.",
    )


def _entries(folder: Path) -> dict[str, Path]:
    """Every file and link under ``folder`` by relative POSIX path (folders themselves are not entries)."""
    out: dict[str, Path] = {}
    for dirpath, dirs, files in os.walk(folder):
        base = Path(dirpath)
        for name in [*files, *(d for d in dirs if (base / d).is_symlink())]:
            path = base / name
            out[path.relative_to(folder).as_posix()] = path
    return dict(sorted(out.items()))


def _check(folder: Path, records: list[FileRecord], *, full: bool) -> list[str]:
    if not folder.is_dir():
        return [f"the folder {folder} is missing"]
    present = _entries(folder)
    wanted = {r.path: r for r in records}
    problems = [f"{rel} was added" for rel in present if rel not in wanted]
    for rel, record in wanted.items():
        path = present.get(rel)
        if path is None:
            problems.append(f"{rel} is missing")
            continue
        problem = _check_one(path, record, full)
        if problem:
            problems.append(f"{rel} {problem}")
    return problems


def _check_one(path: Path, record: FileRecord, full: bool) -> str | None:
    try:
        st = path.lstat()
        if record.kind == "symlink":
            if not path.is_symlink():
                return "is no longer a link"
            target = os.readlink(path)
            return None if target == record.target else f"now points to {target!r}, not {record.target!r}"
        if path.is_symlink() or not path.is_file():
            return "is no longer a plain file"
        if st.st_size != record.size:
            return f"has {st.st_size} bytes, not {record.size}"
        if not full and (st.st_mtime_ns, st.st_ino) == (record.mtime_ns, record.ino):
            return None
        sha, _size = hash_file(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None if sha == record.sha256 else "has other content (its SHA-256 changed)"
