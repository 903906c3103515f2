"""The Windows way of reading a probe child (channel._ThreadPump: a thread per pipe feeding a bounded
queue, a thread waiting on the process) run here on Linux, where it can be checked quickly against
the same stand-ins as the poll(2) pump: the planted gaps, a library that forks and crashes, a flood.
The Windows run itself is tests/windows/test_wine_probe.py."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.probe.test_probe_hostile import _hostile, _kill_left, _killed
from tests.probe.test_probe_standin import EXPECTED
from zluda_runner.probe import channel
from zluda_runner.probe.channel import ProbeChild
from zluda_runner.probe.runner import run_probe


@pytest.fixture(autouse=True)
def _thread_pump(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(channel, "_PUMP", channel._ThreadPump)


def test_planted_gaps_are_exactly_reported(standin: Path) -> None:
    report = run_probe(standin, timeout=2.0)
    for status, ids in EXPECTED.items():
        assert set(report.by_status(status)) == ids, status
    crashed = report.case("event.elapsed_time")
    assert crashed is not None and crashed.signal == "SIGSEGV"


def test_fork_then_crash_is_crashed_and_nothing_outlives_it(cc_build, tmp_path: Path, monkeypatch) -> None:
    """The forked process holds the pipes: the exit is still seen, and the tree kill ends it."""
    lib = _hostile(cc_build, "HOSTILE_FORK", "HOSTILE_FORK_CRASH")
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("HOSTILE_PID_FILE", str(pid_file))
    try:
        rep = run_probe(lib, timeout=20.0, case_ids=["init.cuInit", "error.name"])
        assert (rep.cases[0].status, rep.cases[0].signal) == ("crashed", "SIGSEGV"), rep.cases[0]
        assert rep.cases[1].status == "pass"
        pids = [int(p) for p in pid_file.read_text().split()]
        assert pids and all(_killed(p) for p in pids)
    finally:
        _kill_left(pid_file)


def test_a_flood_is_read_to_its_end_and_only_a_tail_kept() -> None:
    """64 MiB on stdout and stderr, then a marker line: the events after the flood still arrive,
    the bounded queue never holds more than its chunks, and the tails stay at their limit."""
    flood = ("import sys\n"
             "for _ in range(1024): sys.stdout.write('x' * 65536); sys.stderr.write('y' * 65536)\n"
             "print('\\nMARK {\"event\": \"done\"}', flush=True)\n")
    child = ProbeChild([sys.executable, "-c", flood], None, prefix=b"MARK ")
    try:
        deadline = time.monotonic() + 600  # a bound, not a timing
        assert [child.event(deadline), child.event(deadline)] == [{"event": "done"}, {"event": "eof"}]
        assert isinstance(child.pump, channel._ThreadPump)
        assert child.pump.chunks.maxsize == channel.QUEUED_CHUNKS
        assert len(child.err_tail.data) == channel.TAIL_BYTES
    finally:
        assert child.finish() == 0
