"""Two probes run at once by an API caller, each in its own thread: one that fails (or is interrupted)
kills its own workers, never the other's.  On 2d56757 ``reaping()`` killed every worker started since
it began, in any thread: a failing probe SIGKILLed the worker of the probe beside it.  The threads
step through the exact order with events: nothing depends on timing."""

from __future__ import annotations

import sys
import threading

import pytest

from zluda_runner.probe import channel

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX return codes")


def test_a_failing_probe_leaves_another_threads_worker_alone() -> None:
    go, started, done = threading.Event(), threading.Event(), threading.Event()
    box: dict[str, object] = {}

    def other() -> None:
        go.wait(120)
        with channel.reaping():
            child = channel.ProbeChild([sys.executable, "-c", "import sys; sys.stdin.read()"], None,
                                       prefix=b"@@", stdin=True)
            box["child"] = child
            started.set()
            done.wait(120)
            box["alive_until_done"] = child.proc.poll() is None
            child.finish(kill=True)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        with pytest.raises(RuntimeError), channel.reaping():
            go.set()
            assert started.wait(120)
            raise RuntimeError("this probe failed")
    finally:
        done.set()
        thread.join(120)
    assert box["alive_until_done"] is True  # was SIGKILLed by the other thread's failure
