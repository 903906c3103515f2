"""``kill`` of ``zluda-run warmup`` while the release's ``zluda_precompile`` runs: the precompiler gets the
signal (passed on, as to a workload) and the warmup ends there, its code 143.  On 6d64e3b the killed
precompiler read as a failed one and the workload ran next as the fallback: the user's ``kill`` was as
good as ignored.  The precompiler sends the SIGTERM to zluda-run itself: nothing depends on timing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

_SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from zluda_runner.launch import warmup as w
    tool, marker, cache, how = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    w.precompile_job = lambda plan: w.PrecompileJob(tool, str(cache))
    workload = [sys.executable, '-c', 'import sys; open(sys.argv[1], "w").write("ran")', marker]
    r = w.warmup(workload, None, [cache], heartbeat_s=60, plan=object())
    print(json.dumps({'exit': r.exit_code, 'method': r.method, 'precompile_exit': r.precompile_exit}))
""")

# kills zluda-run (its parent) as a `kill` would, then waits to be told to stop; "fail": exits 3 alone
_TOOL = textwrap.dedent("""\
    #!{python}
    import os, signal, sys, time
    if sys.argv[0].endswith('kill'):
        os.kill(os.getppid(), signal.SIGTERM)
        time.sleep(600)
    sys.exit(3)
""")


@pytest.mark.parametrize("how", ["kill", "fail"])
def test_a_kill_during_zluda_precompile_ends_the_warmup(tmp_path: Path, how: str) -> None:
    tool = tmp_path / f"zluda_precompile-{how}"
    tool.write_text(_TOOL.format(python=sys.executable))
    tool.chmod(0o755)
    marker = tmp_path / "workload-ran"
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(tool), str(marker), str(tmp_path), how],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          start_new_session=True,
                          preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    if how == "kill":
        assert report == {"exit": 128 + signal.SIGTERM, "method": "zluda_precompile",
                          "precompile_exit": 128 + signal.SIGTERM}
        assert not marker.exists()  # the workload ran after the kill
    else:  # a precompiler that fails by itself: the workload runs, as before
        assert report["method"] == "workload (zluda_precompile failed)" and report["precompile_exit"] == 3
        assert marker.exists()
