"""core.child.run_child: bounded output, bounded time, the child's whole process group reaped."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap
from pathlib import Path

from zluda_runner.core.child import Tail, json_line, run_child


def test_output_and_answer() -> None:
    res = run_child([sys.executable, "-c", "print('chatter'); print('{\"a\": 1}')"], timeout=30)
    assert res.ok and json_line(res.stdout) == {"a": 1}
    assert run_child(["/no/such/program"], timeout=5).start_error


def test_a_flood_keeps_memory_bounded() -> None:
    """A child writing 512 MiB to stdout and stderr: only the tail is kept, under an address-space
    limit the whole flood would not fit in."""
    code = textwrap.dedent("""
        import resource, sys
        from zluda_runner.core.child import run_child
        soft = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        limit = max(soft, 64 << 20) + (256 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit + (512 << 20), limit + (512 << 20)))
        flood = ("import os\\nb = b'x' * (1 << 20)\\n"
                 "for _ in range(512):\\n    os.write(1, b); os.write(2, b)\\nprint('end')")
        res = run_child([sys.executable, "-c", flood], timeout=120, max_output=1 << 20)
        assert res.ok, res.describe()
        assert len(res.stdout) <= (1 << 20) and res.stdout.endswith("end\\n"), len(res.stdout)
        print("bounded")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "bounded" in proc.stdout, proc.stderr[-2000:]


def test_a_tail_keeps_the_last_bytes_of_a_stream_in_any_chunking() -> None:
    """core.child.Tail, the one tail of a child's output (run_child's pipes, the probe channel's
    streams): the last ``limit`` bytes whatever sizes the stream came in; a limit of 0 keeps none."""
    stream = bytes(range(256)) * 40
    for size in (1, 7, 100, 999, len(stream)):
        tail = Tail(1000)
        for at in range(0, len(stream), size):
            tail.add(stream[at:at + size])
            assert len(tail.data) <= 1000
        assert tail.value() == stream[-1000:]
    read, write = os.pipe()
    os.write(write, b"first\n" + b"x" * 5000 + "\n\u00e9nd \n".encode())
    os.close(write)
    piped = Tail(8)
    piped.drain(os.fdopen(read, "rb"))
    assert (piped.value(), piped.text(3)) == ("x\n\u00e9nd \n".encode(), "\u00e9nd")
    nothing = Tail(0)
    nothing.add(b"dropped")
    assert nothing.value() == b""


def test_a_timeout_kills_what_the_child_started() -> None:
    code = ("import subprocess, sys, time\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
            "print(p.pid, flush=True)\n"
            "time.sleep(300)\n")
    # the timeout has to fire after the child printed its child's pid: 1.5 s first, twice the room
    # again where a loaded machine had not got that far (the verdict never rests on the machine's speed)
    for timeout in (1.5, 3.0, 6.0, 12.0, 24.0):
        res = run_child([sys.executable, "-c", code], timeout=timeout)
        assert res.timed_out and res.returncode is None
        if res.stdout.split():
            break
    grandchild = int(res.stdout.split()[0])
    # SIGKILL is delivered asynchronously: on a loaded machine the grandchild may still be running
    # its last instructions when we look. Wait (bounded) for its exit event, then read its state.
    try:
        pidfd = os.pidfd_open(grandchild)
    except ProcessLookupError:
        pidfd = None
    if pidfd is not None:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll(60_000)  # readable once the process has exited (a zombie counts)
        os.close(pidfd)
    try:  # killed: gone, or a zombie waiting for a reaper (PID 1 of a container may not reap)
        state = Path(f"/proc/{grandchild}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z", "X"), f"the grandchild outlived its group (state {state})"


def test_exit_status_and_what_ended_a_process() -> None:
    """The seam's reading of return codes: POSIX here, and Windows' (pure functions, no kernel32)."""
    from zluda_runner.core import proctree, winproc

    assert proctree.exit_status(-2) == 130 and proctree.exit_status(7) == 7
    assert proctree.ended_by(-11) == "SIGSEGV"
    assert proctree.ended_by(1) is None and proctree.ended_by(None) is None
    assert winproc.exit_status(0xC000013A) == 130 and winproc.exit_status(-1073741510) == 130
    assert winproc.exit_status(0xC0000005) == 0xC0000005 and winproc.exit_status(3) == 3
    assert winproc.termination_name(0xC0000005) == "STATUS_ACCESS_VIOLATION"
    assert winproc.termination_name(-1073741819) == "STATUS_ACCESS_VIOLATION"  # the same code, signed
    assert winproc.termination_name(1) is None
