"""Atomic file writes: one helper for every file we create or replace.

A write goes to a temporary file in the destination's folder, is flushed (and
fsynced when asked), then renamed over the destination: a reader sees the old
file or the new one, never half of one, and an interrupted write leaves at
most a ``.tmp-*`` file that later writes ignore.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

TMP_PREFIX = ".tmp-"


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path: Path, mode: str = "wb", *, durable: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; on a clean exit it replaces ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{path.name}.", dir=path.parent)
    encoding = None if "b" in mode else "utf-8"
    try:
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if durable:
            fsync_dir(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = False) -> None:
    with atomic_open(path, "wb", durable=durable) as fh:
        fh.write(data)


def atomic_write_text(path: Path, text: str, *, durable: bool = False) -> None:
    with atomic_open(path, "w", durable=durable) as fh:
        fh.write(text)


def atomic_write_json(path: Path, data: Any, *, durable: bool = False, compact: bool = False) -> None:
    text = json.dumps(data, separators=(",", ":")) if compact else json.dumps(data, indent=2)
    atomic_write_text(path, text + "\n", durable=durable)


def atomic_copy(src: Path, dest: Path, *, durable: bool = True) -> None:
    """Copy ``src`` over ``dest`` (contents and mode), atomically."""
    with atomic_open(dest, "wb", durable=durable) as out, open(src, "rb") as inp:
        shutil.copyfileobj(inp, out, 1 << 20)
    with contextlib.suppress(OSError):
        shutil.copymode(src, dest)


def try_atomic_write_json(path: Path, data: Any) -> bool:
    """:func:`atomic_write_json` for caches: an unwritable cache only costs speed (False)."""
    try:
        atomic_write_json(path, data, compact=True)
    except OSError:
        return False
    return True
