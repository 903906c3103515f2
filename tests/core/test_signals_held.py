"""``proctree.signals_held``: a signal that comes while a child starts is not lost and does not end us
alone.  Found by CI on 320d54d: ``kill`` of a warmup that had just started its workload (the workload
had already printed) came before the forwarding handler was installed, SIGTERM's default ended the
warmup and the workload ran on, holding the pipe.  The signals here are raised by the process itself,
at the exact point under test, so nothing depends on timing."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from zluda_runner.core.proctree import signals_held

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def test_a_signal_before_the_start_is_held_then_delivered_first() -> None:
    got: list[int] = []
    with signals_held([signal.SIGUSR1, signal.SIGUSR2]) as relay:
        signal.raise_signal(signal.SIGUSR1)  # as if sent while the child was starting
        assert relay.held() == (signal.SIGUSR1,) and got == []
        relay.deliver_to(got.append)
        assert got == [signal.SIGUSR1] and relay.held() == ()
        signal.raise_signal(signal.SIGUSR2)  # later ones go straight to the action
        assert got == [signal.SIGUSR1, signal.SIGUSR2]
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL  # handlers before are back
    assert signal.getsignal(signal.SIGUSR2) is signal.SIG_DFL


def test_a_handler_of_the_callers_own_is_kept() -> None:
    seen: list[int] = []

    def own(signum: int, _frame: object) -> None:
        seen.append(signum)

    before = signal.signal(signal.SIGUSR1, own)
    try:
        got: list[int] = []
        with signals_held([signal.SIGUSR1]) as relay:
            relay.deliver_to(got.append)
            signal.raise_signal(signal.SIGUSR1)
        assert seen == [signal.SIGUSR1] and got == []
        assert signal.getsignal(signal.SIGUSR1) is own
    finally:
        signal.signal(signal.SIGUSR1, before)


def test_a_start_that_failed_with_a_signal_held_ends_as_the_signal_would_have() -> None:
    code = (
        "import signal\n"
        "from zluda_runner.core.proctree import signals_held\n"
        "try:\n"
        "    with signals_held([signal.SIGTERM]):\n"
        "        signal.raise_signal(signal.SIGTERM)\n"
        "        raise OSError('the start failed')\n"
        "except OSError:\n"
        "    pass\n"
        "print('survived')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert "survived" not in proc.stdout


def test_a_block_inside_another_holds_then_hands_back_to_the_outer_action() -> None:
    """A probe worker started inside ``reaping()`` (whose relay already acts): the signal that comes
    while it starts waits until the inner block ends (the worker is known by then), then goes to the
    outer block's action.  On 06039f0 the inner block took nothing (the handler was not the
    default), the outer action raised in the middle of the start and the worker ran on."""
    outer_got: list[int] = []
    inner_got: list[int] = []
    with signals_held([signal.SIGUSR1]) as outer:
        outer.deliver_to(outer_got.append)
        with signals_held([signal.SIGUSR1]):
            signal.raise_signal(signal.SIGUSR1)  # while the inner child starts
            assert outer_got == []
        assert outer_got == [signal.SIGUSR1]  # handed back when the inner block ended
        with signals_held([signal.SIGUSR1]) as inner:
            inner.deliver_to(inner_got.append)  # an inner action owns the signals in its block
            signal.raise_signal(signal.SIGUSR1)
        assert inner_got == [signal.SIGUSR1] and outer_got == [signal.SIGUSR1]
        signal.raise_signal(signal.SIGUSR1)
        assert outer_got == [signal.SIGUSR1, signal.SIGUSR1]  # the outer one's handler is back
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL


def test_an_ending_in_an_inner_block_is_the_outer_blocks_too() -> None:
    """A SIGTERM that ends a run inside a probe (both raise Signalled): a second one while the outer
    block cleans up (kills its other workers) is dropped there too, not raised in the middle of it."""
    from zluda_runner.core.proctree import Signalled, raise_signalled

    with signals_held([signal.SIGUSR1]) as outer:
        outer.deliver_to(raise_signalled)
        with pytest.raises(Signalled), signals_held([signal.SIGUSR1]) as inner:
            inner.deliver_to(raise_signalled)
            signal.raise_signal(signal.SIGUSR1)
        signal.raise_signal(signal.SIGUSR1)  # during the outer block's cleanup: not raised again
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL
