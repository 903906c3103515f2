"""Our own output streams never fail on a character: UTF-8 where the stream cannot say everything.

On Windows a pipe or a file gets the ANSI code page (``cp1252`` and the like), which cannot encode a
CJK or Cyrillic user name in ``%LOCALAPPDATA%``, and ``print`` then raises ``UnicodeEncodeError``.
A console is written through ``WriteConsoleW`` and needs nothing. So, for the command-line entry
point only (a library caller's streams are the caller's): a stream whose encoding is not a Unicode
one is switched to UTF-8, and every stream replaces what it still cannot write instead of raising.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import sys
from typing import TextIO


def _canonical(encoding: str | None) -> str:
    if not encoding:
        return ""
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return encoding.lower()


def make_safe(stream: TextIO | None) -> None:
    """Switch ``stream`` to UTF-8 (unless it is a console or already Unicode) with replacement of
    anything unencodable; streams that cannot be reconfigured are left as they are."""
    if not isinstance(stream, io.TextIOWrapper):
        return
    is_console = False
    with contextlib.suppress(OSError, ValueError):
        is_console = stream.isatty()
    encoding = None if is_console or _canonical(stream.encoding).startswith("utf-") else "utf-8"
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
        if encoding:
            stream.reconfigure(encoding=encoding, errors="replace")
        else:
            stream.reconfigure(errors="replace")


def make_standard_streams_safe() -> None:
    """``make_safe`` on stdout and stderr (the CLI calls this first)."""
    make_safe(sys.stdout)
    make_safe(sys.stderr)
