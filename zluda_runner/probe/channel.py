"""A probe child: its own process tree, bounded output, framed events, death seen at once.

Whatever runs in a probe child (the library under test, torch and what it loads) can print
without end, write to any descriptor it inherited, fork, and crash. So:

- the child is the root of its own process tree (:mod:`zluda_runner.core.proctree`: a process
  group on POSIX, a Job object on Windows), killed whole when the child is done (on POSIX before
  the child is reaped, so the group id cannot have been reused);
- its stdout and stderr are drained as they come and only a tail is kept (:data:`TAIL_BYTES`);
- events are lines carrying a prefix (for the driver worker a random token the library is never
  shown; for the torch scripts a marker); a line without it is output, a line longer than
  :data:`MAX_FRAME` is dropped, and a frame that is not a JSON object with a string ``event``
  becomes ``{"event": "garbled", ...}`` for the caller to charge to the case it was running;
- the child's exit is seen through a pidfd (else polled), not through end-of-file, which a
  forked process holding the pipes would delay for ever.

How the pipes are read is this module's platform seam, chosen once (:data:`_PUMP`): on POSIX
``poll(2)`` on the pipes and the pidfd; on Windows, which cannot poll a pipe, a thread per pipe
feeds a bounded queue (a child that floods it blocks, as an unread pipe blocks it on POSIX) and a
thread waiting on the process handle queues its exit after what it wrote. The private event
pipe reaches a Windows child as an inherited handle, the only one it inherits besides stdio
(``PROC_THREAD_ATTRIBUTE_HANDLE_LIST``; measured under Wine 8: a second inheritable handle not
in the list is not there in the child).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from zluda_runner.core import proctree
from zluda_runner.core.child import GRACE_S, Tail, end_tree
from zluda_runner.core.proctree import (
    ENDING_SIGNALS,
    ProcessTree,
    Signalled,
    handle_arg,
    raise_signalled,
    signals_held,
)

TAIL_BYTES = 64 << 10  # of each output stream, kept for error messages
MAX_FRAME = 1 << 20  # an event line longer than this is not ours
READ_CHUNK = 1 << 16
DRAIN_READS = 256  # reads after the child's exit: what it wrote before it died
POLL_S = 0.1  # exit polling where there is no pidfd; Windows: the longest wait deaf to Ctrl-C
QUEUED_CHUNKS = 64  # Windows: chunks read ahead of the caller, per child
DRAIN_WAIT_S = 2.0  # Windows, after the tree is killed: the longest wait for a pipe's end


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


Deliver = Callable[[int, bytes], None]


class _PollPump:
    """POSIX: ``poll(2)`` on the pipes and the child's pidfd (else its exit polled every POLL_S)."""

    def __init__(self, proc: subprocess.Popen[bytes], fds: list[int], deliver: Deliver) -> None:
        self.proc, self.deliver = proc, deliver
        self.open_fds = set(fds)
        self.pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.pidfd = os.pidfd_open(proc.pid)

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, READ_CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            self.open_fds.discard(fd)
            return
        self.deliver(fd, chunk)

    def _poll(self, timeout_ms: int, with_pidfd: bool) -> list[int]:
        import select

        poller = select.poll()
        for fd in self.open_fds:
            poller.register(fd, select.POLLIN)
        if with_pidfd and self.pidfd is not None:
            poller.register(self.pidfd, select.POLLIN)
        return [fd for fd, _ in poller.poll(timeout_ms)]

    def has_exited(self) -> bool:
        """The child is dead (not reaped: its pid, and so its group id, stay ours)."""
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def step(self, left: float) -> bool:
        """Deliver what comes within ``left`` seconds; True once the child has exited."""
        wait = left if self.pidfd is not None else min(left, POLL_S)
        ready = self._poll(max(1, int(wait * 1000)), with_pidfd=True)
        for fd in ready:
            if fd != self.pidfd:
                self._read(fd)
        return self.pidfd in ready or (self.pidfd is None and self.has_exited())

    def drain(self) -> None:
        """After the exit (and the group killed): what the child wrote before it died."""
        for _ in range(DRAIN_READS):
            ready = self._poll(0, with_pidfd=False)
            if not ready:
                break
            for fd in ready:
                self._read(fd)

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class _ThreadPump:
    """Windows: a thread per pipe feeds a bounded queue; a thread on the process handle queues the
    exit after all that was queued before it (what is still in the pipes is drained after)."""

    _EXIT = (-1, b"")

    def __init__(self, proc: subprocess.Popen[bytes], fds: list[int], deliver: Deliver) -> None:
        self.proc, self.deliver = proc, deliver
        self.chunks: queue.Queue[tuple[int, bytes]] = queue.Queue(QUEUED_CHUNKS)
        self.open_fds = set(fds)
        self.threads = [threading.Thread(target=self._reader, args=(fd,), daemon=True) for fd in fds]
        self.threads.append(threading.Thread(target=self._waiter, daemon=True))
        for thread in self.threads:
            thread.start()

    def _reader(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError:
                chunk = b""
            self.chunks.put((fd, chunk))
            if not chunk:
                return

    def _waiter(self) -> None:
        self.proc.wait()
        self.chunks.put(self._EXIT)

    def _take(self, item: tuple[int, bytes]) -> bool:
        fd, chunk = item
        if fd == self._EXIT[0]:
            return True
        if chunk:
            self.deliver(fd, chunk)
        else:
            self.open_fds.discard(fd)
        return False

    def step(self, left: float) -> bool:
        try:  # in slices: a lock's wait on Windows is deaf to Ctrl-C (CPython 3.13; measured under Wine 8)
            exited = self._take(self.chunks.get(timeout=min(max(left, 0.001), POLL_S)))
        except queue.Empty:
            return False
        while not exited:
            try:
                exited = self._take(self.chunks.get_nowait())
            except queue.Empty:
                break
        return exited

    def drain(self) -> None:
        """The tree is killed: read on to each pipe's end (bounded, should a handle have leaked)."""
        end = time.monotonic() + DRAIN_WAIT_S
        while self.open_fds and time.monotonic() < end:
            try:
                self._take(self.chunks.get(timeout=max(end - time.monotonic(), 0.001)))
            except queue.Empty:
                break

    def close(self) -> None:
        """Let the readers finish (their pipes' writers are dead) before the pipes are closed."""
        self.deliver = lambda fd, chunk: None
        self.drain()


_PUMP = _ThreadPump if sys.platform == "win32" else _PollPump

_LIVE: set[ProbeChild] = set()


@contextlib.contextmanager
def reaping() -> Iterator[None]:
    """Children started inside and not finished when it is left by an exception (Ctrl-C) are
    killed with their trees: a probe interrupted leaves nothing running.  A SIGTERM/SIGHUP (``kill``,
    a CI job's timeout), whose default would end us alone and leave the workers on the GPU, ends the
    same way first, then us with 128+N."""
    before = set(_LIVE)
    me = threading.get_ident()  # only this thread's: a probe run by another thread (an API caller's) goes on
    with signals_held(ENDING_SIGNALS) as relay:
        relay.deliver_to(raise_signalled)
        try:
            yield
        except BaseException as exc:  # passed on to them (Ctrl-C's SIGINT; else SIGTERM), as run_tree does
            signum = exc.signum if isinstance(exc, Signalled) else (
                signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM)
            for child in list(_LIVE - before):
                if child.owner == me:
                    child.finish(signum=signum)
            if isinstance(exc, Signalled):
                raise SystemExit(128 + exc.signum) from None
            raise


class ProbeChild:
    """``argv`` as the root of its own process tree; events from a private pipe or from its stdout.

    ``prefix``: what starts an event line. ``channel``: events come on a private pipe named by the
    argument appended to ``argv`` (a descriptor number, on Windows a handle: the child opens it
    with :func:`zluda_runner.core.proctree.open_inherited`), else on stdout. ``stdin``: keep a
    pipe to it.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None, *, prefix: bytes,
                 channel: bool = False, stdin: bool = False) -> None:
        self.out_tail, self.err_tail = Tail(TAIL_BYTES), Tail(TAIL_BYTES)
        args = [str(a) for a in argv]
        pass_fds: tuple[int, ...] = ()
        read_fd = write_fd = -1
        if channel:
            read_fd, write_fd = os.pipe()
            args.append(handle_arg(write_fd))
            pass_fds = (write_fd,)
        # SIGTERM/SIGHUP held until the child is in _LIVE, then handed back (to reaping()'s action):
        # one that came between its start and then left it running, in a session of its own
        with signals_held(ENDING_SIGNALS):
            self._start(args, pass_fds, stdin, prefix, channel, read_fd, write_fd, env)

    def _start(self, args: list[str], pass_fds: tuple[int, ...], stdin: bool, prefix: bytes, channel: bool,
               read_fd: int, write_fd: int, env: Mapping[str, str] | None) -> None:
        try:
            self.tree: ProcessTree = proctree.start_tree(
                args,
                pass_fds=pass_fds,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env) if env is not None else None,
            )
        except BaseException:
            if channel:
                os.close(read_fd)
                os.close(write_fd)
            raise
        if channel:
            os.close(write_fd)
        self.proc = self.tree.proc
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
        self.pending: deque[dict[str, Any]] = deque()
        self.exited = False
        self.pump = _PUMP(self.proc, list(self.streams), self._deliver)
        self.owner = threading.get_ident()  # the thread whose reaping() it belongs to
        _LIVE.add(self)

    # ---- reading -------------------------------------------------------------------------------

    def _deliver(self, fd: int, chunk: bytes) -> None:
        sink = self.streams[fd]
        if isinstance(sink, FrameReader):
            self.pending.extend(sink.feed(chunk))
        else:
            sink.add(chunk)

    def _on_exit(self) -> None:
        """The child is gone: kill what it left in its tree, then read what it wrote before."""
        self.exited = True
        self.tree.kill()
        self.pump.drain()

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
            if self.pump.step(left):
                self._on_exit()

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

    def finish(self, kill: bool = False, grace: float = GRACE_S, signum: int | None = None) -> int | None:
        """End the child by the one policy (:func:`zluda_runner.core.child.end_tree`): its stdin closed
        and ``signum`` passed on, ``grace`` seconds (none with ``kill``), then its whole tree killed;
        its return code (POSIX, negative: the signal that ended it; Windows: its exit code).

        It stays known to :func:`reaping` until it is reaped: a signal in the grace (or anywhere
        before) lets reaping end it (it was dropped first, and a SIGTERM in the grace left it running)."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        if self.proc.returncode is None:  # else reaped by a finish that a signal cut short afterwards
            end_tree(self.tree, grace=0 if kill else grace, signum=signum)
        _LIVE.discard(self)
        self.pump.close()
        for fd in self.own_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        self.tree.close()
        return self.proc.returncode
