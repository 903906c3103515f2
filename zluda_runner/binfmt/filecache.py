"""Per-file cache of parsed binary facts, so re-inspecting an unchanged install is near instant.

One JSON file per kind of record, ``<cache>/binfmt/<kind>.json``, read once by each
:class:`FileCache`: ``{"reader": identity, "files": {path: [size, mtime_ns, inode, record]}}``.
An entry counts only while the file at ``path`` still has that size, mtime and inode, so a
warm lookup is one ``stat`` and a dict lookup; a reader of another identity or version makes
the whole file a miss. :meth:`FileCache.flush` merges with what is on disk (entries of files
since changed or gone are dropped) and writes to a temporary name renamed into place, so a
concurrent or interrupted writer never leaves a torn file. A corrupt or unreadable file is
treated as empty; an unwritable one only costs speed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from zluda_runner.core.fsutil import try_atomic_write_json
from zluda_runner.core.serial import JsonMixin

T = TypeVar("T", bound=JsonMixin)
Stamp = tuple[int, int, int]


def reader_identity(reader: Callable[..., Any]) -> str:
    """``module.qualname@version`` (version from the reader's ``cache_version`` attribute)."""
    module = getattr(reader, "__module__", "?")
    name = getattr(reader, "__qualname__", type(reader).__name__)
    version = getattr(reader, "cache_version", 0)
    return f"{module}.{name}@{version}"


def stamp_of(path: str) -> Stamp | None:
    """(size, mtime_ns, inode) of the file at ``path`` (links followed), None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


class FileCache:
    """The records of one kind, keyed by path and valid while the file's stamp is unchanged.
    ``cache_dir`` None: nothing is kept."""

    def __init__(self, cache_dir: Path | None, kind: str, identity: str) -> None:
        self.file = Path(cache_dir) / "binfmt" / f"{kind}.json" if cache_dir is not None else None
        self.identity = identity
        self._entries = self._load()
        self._new: dict[str, list[Any]] = {}

    def _load(self) -> dict[str, list[Any]]:
        if self.file is None:
            return {}
        try:
            with open(self.file, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return {}
        files = data.get("files") if isinstance(data, dict) and data.get("reader") == self.identity else None
        return files if isinstance(files, dict) else {}

    def get(self, path: str) -> tuple[Stamp | None, Any]:
        """(the file's stamp, its record when the cache holds one for that stamp, else None)."""
        stamp = stamp_of(path)
        entry = self._entries.get(path)
        if stamp is None or not isinstance(entry, list) or len(entry) != 4 or tuple(entry[:3]) != stamp:
            return stamp, None
        return stamp, entry[3]

    def put(self, path: str, stamp: Stamp | None, record: Any) -> None:
        """Keep ``record`` for ``path`` as it was at ``stamp`` (from :meth:`get`, before reading)."""
        if self.file is None or stamp is None:
            return
        self._entries[path] = self._new[path] = [*stamp, record]

    def flush(self) -> None:
        """Write the records put since the last flush, beside those on disk whose files are unchanged."""
        if self.file is None or not self._new:
            return
        on_disk = self._load()
        merged = {p: e for p, e in on_disk.items()
                  if isinstance(e, list) and len(e) == 4 and stamp_of(p) == tuple(e[:3])}
        merged.update(self._new)
        self._entries = merged
        self._new = {}
        try_atomic_write_json(self.file, {"reader": self.identity, "files": merged})


def cached_read(
    path: str | Path,
    kind: str,
    reader: Callable[[Path], T],
    cache_dir: Path | None,
    cls: type[T],
) -> T:
    """``reader(path)``, cached under ``cache_dir/binfmt/<kind>.json`` (no caching when cache_dir is None).

    ``cls`` and the result are JsonMixin records (``from_dict`` / ``to_dict``). Errors raised by
    ``reader`` propagate and are not cached. For a few files at a time: each call reads and writes
    the kind's file (many files: one :class:`FileCache`).
    """
    p = Path(path)
    if cache_dir is None:
        return reader(p)
    cache = FileCache(cache_dir, kind, reader_identity(reader))
    stamp, record = cache.get(str(p))
    if record is not None:
        try:
            return cls.from_dict(record)
        except (ValueError, TypeError, KeyError):
            pass
    value = reader(p)
    cache.put(str(p), stamp, value.to_dict())
    cache.flush()
    return value
