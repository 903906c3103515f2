"""Two ending signals in a row (a second ``kill``, a SIGHUP after a SIGTERM when a terminal closes, a
CI runner's TERM then HUP): the first ends us with 128+N after every cleanup; the second cuts none
of it short.  Found on 58b8c13: two signals held while a side of ``ab`` started ended zluda-run by
the second one's default (129, not 143) when the held block was left, and the record folder stayed
on disk; a second SIGTERM while a probe killed its workers raised in the middle of that, left them
running and printed a traceback.  Each signal is raised by the process itself at the exact point
under test, in a subprocess: nothing depends on timing."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import still_running

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL)
                                              for s in (signal.SIGTERM, signal.SIGHUP)])


def test_the_second_held_signal_neither_acts_nor_ends_us_by_its_default() -> None:
    proc = _python("""
        import signal
        from zluda_runner.core.proctree import Signalled, raise_signalled, signals_held
        try:
            with signals_held([signal.SIGTERM, signal.SIGHUP]) as relay:
                signal.raise_signal(signal.SIGTERM)
                signal.raise_signal(signal.SIGHUP)
                relay.deliver_to(raise_signalled)
        except Signalled as stop:
            print('ended by', stop.signum)
            print('held', relay.held())
        print('cleanup done')
        """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"ended by {int(signal.SIGTERM)}", "held ()", "cleanup done"]


def test_term_then_hup_while_a_side_starts_ends_ab_with_143_and_no_record_folder(tmp_path: Path) -> None:
    proc = _python("""
        import signal, sys
        from pathlib import Path
        from zluda_runner.core import proctree
        from zluda_runner.abtest.run import run_ab
        real = proctree.start_tree
        def start(*args, **kwargs):
            tree = real(*args, **kwargs)
            signal.raise_signal(signal.SIGTERM)  # both while the side starts: held, then delivered
            signal.raise_signal(signal.SIGHUP)
            return tree
        proctree.start_tree = start
        run_ab([sys.executable, '-c', 'import time; time.sleep(600)'], [sys.executable, '-c', 'pass'],
               runs=1, work_dir=Path(sys.argv[1]))
        print('NOT-ENDED')
        """, str(tmp_path))
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr  # was -SIGHUP: the second one's default
    assert "NOT-ENDED" not in proc.stdout and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []  # the record folder went with the cleanup (it stayed)


def test_a_second_sigterm_while_a_probe_kills_its_workers_kills_them_all(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    proc = _python("""
        import signal, sys
        from pathlib import Path
        from zluda_runner.probe import channel
        real = channel.ProbeChild.finish
        calls = []
        def finish(self, *args, **kwargs):
            calls.append(self)
            if len(calls) == 1:
                signal.raise_signal(signal.SIGTERM)  # the second one, during the first one's cleanup
            return real(self, *args, **kwargs)
        channel.ProbeChild.finish = finish
        with channel.reaping():
            kids = [channel.ProbeChild([sys.executable, '-c', 'import time; time.sleep(600)'], None,
                                       prefix=b'@@') for _ in range(2)]
            Path(sys.argv[1]).write_text(' '.join(str(k.proc.pid) for k in kids))
            signal.raise_signal(signal.SIGTERM)
        print('NOT-ENDED')
        """, str(pids))
    workers = [int(p) for p in pids.read_text().split()]
    try:
        assert proc.returncode == 128 + signal.SIGTERM, proc.stderr  # was 1, with a traceback
        assert "Traceback" not in proc.stderr and "NOT-ENDED" not in proc.stdout
        assert [pid for pid in workers if still_running(pid)] == []  # both were left running
    finally:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
