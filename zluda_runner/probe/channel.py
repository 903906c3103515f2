"""A probe child: its own process group, bounded output, framed events, death seen at once.

Whatever runs in a probe child (the library under test, torch and what it loads) can print
without end, write to any descriptor it inherited, fork, and crash. So:

- the child leads its own process group, and the whole group is killed when the child is done
  (before the child is reaped, so the group id cannot have been reused);
- its stdout and stderr are drained as they come and only a tail is kept (:data:`TAIL_BYTES`);
- events are lines carrying a prefix (for the driver worker a random token the library is never
  shown; for the torch scripts a marker); a line without it is output, a line longer than
  :data:`MAX_FRAME` is dropped, and a frame that is not a JSON object with a string ``event``
  becomes ``{"event": "garbled", ...}`` for the caller to charge to the case it was running;
- the child's exit is seen through a pidfd (else polled), not through end-of-file, which a
  forked process holding the pipes would delay for ever.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

TAIL_BYTES = 64 << 10  # of each output stream, kept for error messages
MAX_FRAME = 1 << 20  # an event line longer than this is not ours
READ_CHUNK = 1 << 16
DRAIN_READS = 256  # reads after the child's exit: what it wrote before it died
POLL_S = 0.1  # exit polling where there is no pidfd


class Tail:
    """The last ``limit`` bytes written to it."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.data = bytearray()

    def add(self, chunk: bytes) -> None:
        if self.limit <= 0:
            return
        self.data += chunk[-self.limit :]
        if len(self.data) > self.limit:
            del self.data[: len(self.data) - self.limit]

    def text(self, limit: int) -> str:
        return bytes(self.data).decode("utf-8", "replace").strip()[-limit:]


def garbled(reason: str, payload: bytes) -> dict[str, Any]:
    return {"event": "garbled", "detail": f"{reason}: {payload[:120].decode('utf-8', 'replace')!r}"}


def decode_frame(payload: bytes) -> dict[str, Any]:
    """One frame's JSON object, else a ``garbled`` event saying what was wrong with it."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return garbled("not UTF-8", payload)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return garbled("not JSON", payload)
    if not isinstance(value, dict) or not isinstance(value.get("event"), str):
        return garbled("not an event object", payload)
    return value


class FrameReader:
    """Splits a byte stream into lines: those holding ``prefix`` are frames, the rest output."""

    def __init__(self, prefix: bytes, output: Tail) -> None:
        self.prefix = prefix
        self.output = output
        self.buffer = bytearray()
        self.skipping = False  # inside an over-long line, until its end

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        self.buffer += chunk
        while True:
            end = self.buffer.find(b"\n")
            if end < 0:
                break
            line = bytes(self.buffer[:end])
            del self.buffer[: end + 1]
            if self.skipping:
                self.skipping = False
                self.output.add(line[-TAIL_BYTES:] + b"\n")
                continue
            at = line.rfind(self.prefix)
            if at < 0:
                self.output.add(line + b"\n")
                continue
            self.output.add(line[:at])
            events.append(decode_frame(line[at + len(self.prefix) :]))
        if len(self.buffer) > MAX_FRAME:
            at = self.buffer.rfind(self.prefix)
            if at < 0 or self.skipping:  # output: keep what could start a frame
                keep = 0 if self.skipping else len(self.prefix) - 1
                self.output.add(bytes(self.buffer[: len(self.buffer) - keep]))
                del self.buffer[: len(self.buffer) - keep]
            else:
                self.output.add(bytes(self.buffer[:at]))
                del self.buffer[:at]
                if len(self.buffer) > MAX_FRAME:
                    events.append(garbled(f"a frame longer than {MAX_FRAME} bytes", bytes(self.buffer)))
                    self.output.add(bytes(self.buffer))
                    self.buffer.clear()
                    self.skipping = True
        return events


_LIVE: set[ProbeChild] = set()


@contextlib.contextmanager
def reaping() -> Iterator[None]:
    """Children started inside and not finished when it is left by an exception (Ctrl-C) are
    killed with their groups: a probe interrupted leaves nothing running."""
    before = set(_LIVE)
    try:
        yield
    except BaseException:
        for child in list(_LIVE - before):
            child.finish(kill=True)
        raise


class ProbeChild:
    """``argv`` in its own process group; events from a private pipe or from its stdout.

    ``prefix``: what starts an event line. ``channel``: events come on a private pipe whose
    descriptor number is appended to ``argv`` (else on stdout). ``stdin``: keep a pipe to it.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None, *, prefix: bytes,
                 channel: bool = False, stdin: bool = False) -> None:
        self.out_tail, self.err_tail = Tail(), Tail()
        args = [str(a) for a in argv]
        pass_fds: tuple[int, ...] = ()
        read_fd = write_fd = -1
        if channel:
            read_fd, write_fd = os.pipe()
            args.append(str(write_fd))
            pass_fds = (write_fd,)
        try:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=pass_fds,
                env=dict(env) if env is not None else None,
                start_new_session=True,
            )
        except BaseException:
            if channel:
                os.close(read_fd)
                os.close(write_fd)
            raise
        if channel:
            os.close(write_fd)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.streams: dict[int, FrameReader | Tail] = {}
        out_fd, err_fd = self.proc.stdout.fileno(), self.proc.stderr.fileno()
        if channel:
            self.streams[read_fd] = FrameReader(prefix, Tail(0))  # anything else on it: dropped
            self.streams[out_fd] = self.out_tail
        else:
            self.streams[out_fd] = FrameReader(prefix, self.out_tail)
        self.streams[err_fd] = self.err_tail
        self.own_fds = [read_fd] if channel else []
        self.open_fds = set(self.streams)
        self.pending: deque[dict[str, Any]] = deque()
        self.exited = False
        self.pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.pidfd = os.pidfd_open(self.proc.pid)
        _LIVE.add(self)

    # ---- reading -------------------------------------------------------------------------------

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, READ_CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            self.open_fds.discard(fd)
            return
        sink = self.streams[fd]
        if isinstance(sink, FrameReader):
            self.pending.extend(sink.feed(chunk))
        else:
            sink.add(chunk)

    def _has_exited(self) -> bool:
        """The child is dead (not reaped: its pid, and so its group id, stay ours)."""
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def _on_exit(self) -> None:
        """The child is gone: kill what it left in its group, then read what it wrote before."""
        self.exited = True
        self._kill_group()
        for _ in range(DRAIN_READS):
            poller = select.poll()
            for fd in self.open_fds:
                poller.register(fd, select.POLLIN)
            ready = [fd for fd, _ in poller.poll(0)]
            if not ready:
                break
            for fd in ready:
                self._read(fd)

    def event(self, deadline: float) -> dict[str, Any] | None:
        """The next event; ``{"event": "eof"}`` once the child has exited; None at ``deadline``."""
        while True:
            if self.pending:
                return self.pending.popleft()
            if self.exited:
                return {"event": "eof"}
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            poller = select.poll()
            for fd in self.open_fds:
                poller.register(fd, select.POLLIN)
            if self.pidfd is not None:
                poller.register(self.pidfd, select.POLLIN)
            wait = left if self.pidfd is not None else min(left, POLL_S)
            ready = [fd for fd, _ in poller.poll(max(1, int(wait * 1000)))]
            for fd in ready:
                if fd != self.pidfd:
                    self._read(fd)
            if self.pidfd in ready or (self.pidfd is None and self._has_exited()):
                self._on_exit()

    def run_to_end(self, deadline: float, keep: Callable[[dict[str, Any]], bool]
                   ) -> tuple[list[dict[str, Any]], bool]:
        """The events ``keep`` accepts until the child exits (True) or ``deadline`` (False)."""
        events: list[dict[str, Any]] = []
        while True:
            event = self.event(deadline)
            if event is None:
                return events, False
            if event["event"] == "eof":
                return events, True
            if keep(event):
                events.append(event)

    def tail(self, limit: int = 600) -> str:
        """What the child printed last: stderr, else stdout."""
        return self.err_tail.text(limit) or self.out_tail.text(limit)

    def output_tail(self, limit: int = 600) -> str:
        """Both streams' tails (stdout first), for a crash report."""
        return " / ".join(filter(None, [self.out_tail.text(limit), self.err_tail.text(limit)]))[-limit:]

    # ---- writing, ending -----------------------------------------------------------------------

    def send(self, line: str) -> bool:
        stdin = self.proc.stdin
        if stdin is None:
            return False
        try:
            stdin.write(line.encode() + b"\n")
            stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def _wait_exit(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        while not self._has_exited():
            if time.monotonic() >= end:
                return False
            if self.pidfd is not None:
                poller = select.poll()
                poller.register(self.pidfd, select.POLLIN)
                poller.poll(max(1, int((end - time.monotonic()) * 1000)))
            else:
                time.sleep(POLL_S)
        return True

    def finish(self, kill: bool = False, grace: float = 5.0) -> int | None:
        """End the child (at once with ``kill``, else after ``grace`` seconds), then its whole group;
        its return code (negative: the signal that ended it)."""
        _LIVE.discard(self)
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        if kill or not self._wait_exit(grace):
            self._kill_group()
        self._kill_group()  # the child has exited, not yet been reaped: its group is still ours
        rc = self.proc.wait()
        for fd in self.own_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        return rc
