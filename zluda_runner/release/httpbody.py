"""What an HTTP response says of its body, read exactly: the whole file's size it announces, where a
resumed body starts (``Content-Range``), and a reader that keeps every byte that arrived
(:func:`body_reader`), for :mod:`zluda_runner.release.fetch`."""

from __future__ import annotations

import http.client
from collections.abc import Callable

import requests


def announced_total(resp: requests.Response, written: int, remaining: int | None) -> int | None:
    """The whole file's size as the server states it (Content-Range's total, else the length)."""
    if resp.status_code == 206:
        tail = resp.headers.get("Content-Range", "").rsplit("/", 1)[-1].strip()
        if tail.isdigit():
            return int(tail)
    return None if remaining is None else written + remaining


def body_reader(resp: requests.Response) -> Callable[[memoryview], int]:
    """Read the body into a buffer, at most one socket read per call, keeping every byte sent.

    For a plain (identity-encoded) body the underlying ``http.client.HTTPResponse``
    is read directly with ``read1``: one ``recv`` per call (so a trickling server
    cannot hold a read for long), and a body cut short returns what did arrive
    (urllib3's buffered ``read(amt)`` drops it when it raises), so a resume
    re-requests only what is really missing.
    """
    raw = resp.raw
    fp = getattr(raw, "_fp", None)
    encoding = resp.headers.get("Content-Encoding", "identity").strip().lower()
    read1: Callable[[int], bytes]
    if isinstance(fp, http.client.HTTPResponse) and encoding in ("", "identity"):
        read1 = fp.read1
    else:
        read_any = getattr(raw, "read1", None) or raw.read

        def read1(n: int) -> bytes:
            return bytes(read_any(n, decode_content=True))

    def readinto(buf: memoryview) -> int:
        data = read1(len(buf))
        buf[: len(data)] = data
        return len(data)

    return readinto


def content_range_start(value: str) -> int | None:  # "bytes 100-999/1000"
    try:
        unit, rest = value.strip().split(" ", 1)
        if unit.lower() != "bytes":
            return None
        return int(rest.split("-", 1)[0])
    except ValueError:
        return None
