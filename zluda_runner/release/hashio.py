"""Hash while writing, and show progress: the byte-moving half of :mod:`zluda_runner.release.fetch`."""

from __future__ import annotations

import hashlib
import io
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from zluda_runner.core.errors import ChecksumError
from zluda_runner.core.textio import raw, visible

CHUNK_SIZE = 1 << 20  # 1 MiB reads: few syscalls, hashlib releases the GIL on big buffers


def hash_file(path: Path) -> tuple[str, int]:
    """SHA-256 (hex) and size of a local file."""
    hasher = hashlib.sha256()
    size = 0
    buf = bytearray(CHUNK_SIZE)
    view = memoryview(buf)
    with path.open("rb") as src:
        while True:
            n = src.readinto(buf)
            if not n:
                break
            hasher.update(view[:n])
            size += n
    return hasher.hexdigest(), size


class Progress:
    """The download's progress on stderr (a terminal only): bytes, rate and time left (rich)."""

    def __init__(self, label: str, total: int | None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )
        from rich.progress import Progress as RichProgress

        console = Console(file=raw(sys.stderr), no_color=bool(os.environ.get("NO_COLOR")))  # its own codes
        self._bar = RichProgress(TextColumn("fetching {task.description}", markup=False), BarColumn(),
                                 DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                                 console=console)
        self._task = self._bar.add_task(visible(label), total=total)
        self._total = total

    @property
    def total(self) -> int | None:
        return self._total

    @total.setter
    def total(self, value: int | None) -> None:
        self._total = value
        self._bar.update(self._task, total=value)

    def __call__(self, n: int) -> None:
        self._bar.advance(self._task, n)

    def start(self) -> None:
        self._bar.start()

    def stop(self) -> None:
        self._bar.stop()


@contextmanager
def progress_bar(show: bool, label: str, total: int | None) -> Iterator[Callable[[int], None]]:
    if not show:
        yield lambda n: None
        return
    bar = Progress(label, total)
    bar.start()
    try:
        yield bar
    finally:
        bar.stop()


class HashingWriter:
    """Writes chunks to a file and hashes them on a helper thread.

    Receiving + writing (this thread) overlaps with SHA-256 (the helper;
    hashlib releases the GIL on large buffers), which roughly doubles loopback
    throughput on two cores. A small ring of 1 MiB buffers carries the data.
    """

    BUFFERS = 4

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.hasher = hashlib.sha256()
        self.written = 0
        self._free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        self._full: queue.SimpleQueue[tuple[bytearray, int] | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        for _ in range(self.BUFFERS):
            self._free.put(bytearray(CHUNK_SIZE))
        self._thread = threading.Thread(target=self._hash_loop, name="zluda-runner-sha256", daemon=True)
        self._thread.start()

    def _hash_loop(self) -> None:
        while True:
            item = self._full.get()
            if item is None:
                return
            buf, n = item
            if n < 0:  # a drain request
                self._idle.release()
                continue
            self.hasher.update(memoryview(buf)[:n])
            self._free.put(buf)

    def buffer(self) -> bytearray:
        return self._free.get()

    def commit(self, buf: bytearray, n: int) -> None:
        if n <= 0:
            self._free.put(buf)
            return
        self.out.write(memoryview(buf)[:n])
        self.written += n
        self._full.put((buf, n))

    def commit_existing(self, buf: bytearray, n: int) -> None:
        """Count and hash ``n`` bytes already in the file (a download being resumed)."""
        if n <= 0:
            self._free.put(buf)
            return
        self.written += n
        self._full.put((buf, n))

    def drain(self) -> None:
        self._full.put((bytearray(0), -1))
        self._idle.acquire()

    def reset(self) -> None:
        self.drain()
        self.out.seek(0)
        self.out.truncate()
        self.hasher = hashlib.sha256()
        self.written = 0

    def hexdigest(self) -> str:
        self.drain()
        return self.hasher.hexdigest()

    def close(self) -> None:
        self._full.put(None)
        self._thread.join()


@contextmanager
def hashing_writer(dest: Path, resume: bool = False) -> Iterator[HashingWriter]:
    """A writer into ``dest``; with ``resume`` an existing ``dest`` is hashed and continued."""
    existing = dest.is_file() and resume
    out: io.BufferedRandom | io.BufferedWriter
    with open(dest, "r+b") if existing else open(dest, "wb") as out:
        writer = HashingWriter(out)
        try:
            if existing:
                while True:
                    buf = writer.buffer()
                    n = out.readinto(buf) if isinstance(out, io.BufferedRandom) else 0
                    writer.commit_existing(buf, n)
                    if not n:
                        break
            yield writer
        finally:
            writer.close()


def normalize_sha256(value: str) -> str:
    text = value.strip().lower()
    if text.startswith("sha256:"):
        text = text[len("sha256:") :]
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise ChecksumError(
            f"{value!r} is not a SHA-256 digest (64 hexadecimal digits).",
            hint="Fix the sha256 field of this asset in the manifest.",
        )
    return text
