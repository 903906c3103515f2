"""``kill`` of ``zluda-run ab`` (or ``poc``) between its runs (a side's records being read, the record folders
being removed): we end with 143 and leave no record folder (a run's tensors) in the temporary folder.
On 87bff75 only a side's run itself took SIGTERM: its default, anywhere else, ended zluda-run at once
and left ``zluda-ab-*`` behind.  The signal is raised by the process itself at the point under test."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

_SCRIPT = textwrap.dedent("""
    import signal, sys, tempfile
    from pathlib import Path
    from zluda_runner.abtest import run as r
    where = sys.argv[2]
    if where == 'records':
        real = r.read_records
        def read(folder):
            signal.raise_signal(signal.SIGTERM)  # while a side's records are read
            return real(folder)
        r.read_records = read
    else:
        real_rmtree = tempfile.TemporaryDirectory._rmtree  # after its exit finalizer is detached
        def rmtree(*args, **kwargs):
            signal.raise_signal(signal.SIGTERM)  # as the record folders are removed
            return real_rmtree(*args, **kwargs)
        tempfile.TemporaryDirectory._rmtree = rmtree
    side = [sys.executable, '-c', 'pass']
    if sys.argv[3] == 'ab':
        r.run_ab(side, side, runs=2, work_dir=Path(sys.argv[1]))
    else:  # poc's runs use the same record folders
        from zluda_runner.poc.model import Thresholds
        from zluda_runner.poc.runner import Workload, run_sides
        from zluda_runner.telemetry.model import NoTelemetry
        run_sides(Workload('zluda', tuple(side), {}), Workload('reference', tuple(side), {}), runs=2,
                  source=NoTelemetry('none here'), thresholds=Thresholds(), work_dir=Path(sys.argv[1]))
    print('NOT-ENDED')
""")


@pytest.mark.parametrize("command", ["ab", "poc"])
@pytest.mark.parametrize("where", ["records", "cleanup"])
def test_a_sigterm_between_runs_ends_with_143_and_no_record_folder(tmp_path: Path, where: str,
                                                                    command: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(work), where, command], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr  # was -SIGTERM: its default
    assert "NOT-ENDED" not in proc.stdout and "Traceback" not in proc.stderr
    assert list(work.iterdir()) == []
