"""Per-file cache of parsed binary facts, so re-inspecting an unchanged install is near instant.

An entry is keyed by (real path, size, mtime_ns, kind, reader identity and
version); a changed file gets a new key and the old entry is simply never read
again. Entries are JSON, written to a temporary name and renamed into place, so
a concurrent or interrupted writer never leaves a torn entry. A corrupt or
unreadable entry is treated as a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from zluda_runner.core.fsutil import try_atomic_write_json
from zluda_runner.core.serial import JsonMixin

T = TypeVar("T", bound=JsonMixin)


def reader_identity(reader: Callable[..., Any]) -> str:
    """``module.qualname@version`` (version from the reader's ``cache_version`` attribute)."""
    module = getattr(reader, "__module__", "?")
    name = getattr(reader, "__qualname__", type(reader).__name__)
    version = getattr(reader, "cache_version", 0)
    return f"{module}.{name}@{version}"


def cache_key(path: Path, kind: str, reader: Callable[..., Any]) -> str:
    """The cache key of ``path`` as it is now (raises OSError if it cannot be stat'ed)."""
    real = os.path.realpath(path)
    st = os.stat(real)
    text = "\0".join([real, str(st.st_size), str(st.st_mtime_ns), kind, reader_identity(reader)])
    return hashlib.sha256(text.encode()).hexdigest()


def cached_read(
    path: str | Path,
    kind: str,
    reader: Callable[[Path], T],
    cache_dir: Path | None,
    cls: type[T],
) -> T:
    """``reader(path)``, cached under ``cache_dir/binfmt/<kind>/`` (no caching when cache_dir is None).

    ``cls`` and the result are JsonMixin records (``from_dict`` / ``to_dict``).
    Errors raised by ``reader`` propagate and are not cached.
    """
    p = Path(path)
    if cache_dir is None:
        return reader(p)
    try:
        key = cache_key(p, kind, reader)
    except OSError:
        return reader(p)  # let the reader raise its own, well-worded error
    entry_dir = Path(cache_dir) / "binfmt" / kind
    entry = entry_dir / f"{key[:2]}" / f"{key}.json"
    try:
        with open(entry, encoding="utf-8") as fh:
            data = json.load(fh)
        return cls.from_dict(data)
    except (OSError, ValueError, TypeError, KeyError):
        pass
    value = reader(p)
    try_atomic_write_json(entry, value.to_dict())  # unwritable: only costs speed
    return value
