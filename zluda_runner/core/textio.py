"""Our own output streams never fail on a character: UTF-8 where the stream cannot say everything.

On Windows a pipe or a file gets the ANSI code page (``cp1252`` and the like), which cannot encode a
CJK or Cyrillic user name in ``%LOCALAPPDATA%``, and ``print`` then raises ``UnicodeEncodeError``.
A console is written through ``WriteConsoleW`` and needs nothing. So, for the command-line entry
point only (a library caller's streams are the caller's): a stream whose encoding is not a Unicode
one is switched to UTF-8, and every stream replaces what it still cannot write instead of raising.
"""

from __future__ import annotations

import codecs
import io
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from typing import TextIO

# C0 controls but newline, DEL, C1 controls (0x9b is CSI to many terminals), and the Unicode
# direction marks/overrides/isolates and line separators that reorder or break what is shown: each
# written as it is shown (a translation table: no regular expression to import on a launch's path)
_UNSAFE = [*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F,
           *range(0x2028, 0x202F), *range(0x2066, 0x206A)]
_SHOWN = {code: " " if code == 9 else f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
          for code in _UNSAFE}


def visible(text: str, *, newlines: bool = False) -> str:
    """``text`` safe to show on a terminal: escape sequences (title, clipboard, screen clear), ``\\r``,
    BEL, NUL, C1 and bidi controls written as visible ``\\xNN``/``\\uNNNN`` (a tab as a space), never
    acted on; a newline too unless ``newlines``. Idempotent."""
    if not isinstance(text, str):
        raise TypeError("text expected")
    text = text.replace("\r\n", "\n") if newlines else text.replace("\n", "\\n")
    return text.translate(_SHOWN)


class Sink(io.TextIOBase):
    """A text stream whose every write is :func:`visible` (newlines kept): what the CLI's stdout and
    stderr are, so every view, message and warning passes one escape. ``raw`` is the stream beneath,
    for what writes its own control sequences (the download progress bar)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.raw = stream
        # where a command being remembered keeps what it says: (chunks, this stream's number), each chunk
        # [number, text] as written beneath (:mod:`zluda_runner.commands.commandmemo`)
        self.tee: tuple[list[list[object]], int] | None = None

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.raw.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.raw.errors

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    def flush(self) -> None:
        self.raw.flush()

    def write(self, text: str) -> int:
        shown = visible(text, newlines=True)
        self.raw.write(shown)
        if self.tee is not None:
            self.tee[0].append([self.tee[1], shown])
        return len(text)


def raw(stream: TextIO) -> TextIO:
    """The stream beneath a :class:`Sink` (``stream`` itself otherwise)."""
    return stream.raw if isinstance(stream, Sink) else stream


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
    try:  # noqa: SIM105 (contextlib is not imported on a launch's path)
        is_console = stream.isatty()
    except (OSError, ValueError):
        pass
    encoding = None if is_console or _canonical(stream.encoding).startswith("utf-") else "utf-8"
    try:
        if encoding:
            stream.reconfigure(encoding=encoding, errors="replace")
        else:
            stream.reconfigure(errors="replace")
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def make_standard_streams_safe() -> None:
    """``make_safe`` on stdout and stderr, then each made a :class:`Sink` (the CLI calls this first)."""
    make_safe(sys.stdout)
    make_safe(sys.stderr)
    if sys.stdout is not None and not isinstance(sys.stdout, Sink):
        sys.stdout = Sink(sys.stdout)
    if sys.stderr is not None and not isinstance(sys.stderr, Sink):
        sys.stderr = Sink(sys.stderr)


# zluda-run's own lines inside a Python workload (the start-up code of launch/startup.py and
# launch/windows/preload.py, the placed-defaults .pth hook): the same rule as make_safe, for a stream that
# is the workload's and stays as it is. A console gets text (WriteConsoleW says everything); a pipe or a
# file gets the line as UTF-8 bytes, as zluda-run's own output is, never in the ANSI code page (cp1252)
# the workload's stderr has there on Windows. Python source, run by the workload's interpreter: it
# imports nothing of zluda_runner.
WORKLOAD_SAY = r'''

def _zluda_runner_say(line):
    """One line of zluda-run's on the workload's stderr: UTF-8 unless it is a console."""
    import sys

    stream = sys.stderr
    if stream is None:
        return
    try:
        if not stream.isatty():
            stream.flush()
            stream.buffer.write(line.encode("utf-8", "replace"))
            stream.buffer.flush()
            return
    except Exception:  # no buffer beneath (a workload's own stream object): as text
        pass
    try:
        stream.write(line)
        stream.flush()
    except Exception:
        pass
'''
