"""The driver probe against hostile stand-ins (issue 11, items 4, 5, 14, 15): what the library
under test does to its own process (print, write to any descriptor, fork, crash) never takes the
probe down, never grows its memory, never outlives it, and never decides what another case says.
Bounds are asserted with resource limits in a child process, never with wall-clock timing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zluda_runner.probe.runner import run_probe
from zluda_runner.probe.session import ProbeRequest, run_requested_probe

SOURCES = ["probe/hostile_cuda.c"]
DEPS = ["probe/standin_cuda.c"]
SONAME = "-Wl,-soname,libcuda.so.1"
CASES = ["init.cuInit", "error.name", "device.count"]


def _hostile(cc_build, *flags: str) -> Path:
    return cc_build(SOURCES, "libcuda.so.1", args=[*(f"-D{f}" for f in flags), SONAME], deps=DEPS)


def _gone(pid: int) -> bool:
    """The process is gone (or a zombie nobody has reaped yet: it runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _killed(pid: int) -> bool:
    """Gone, allowing the kernel a moment to deliver a SIGKILL already sent (not a time bound)."""
    for _ in range(100):
        if _gone(pid):
            return True
        time.sleep(0.05)
    return False


# ---- item 4: a relative --libcuda is the file the user named --------------------------------------


@pytest.fixture
def decoy_setup(tmp_path: Path, standin: Path, cc_build, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``./libcuda.so.1`` is the stand-in; a library crashing on load of the same name sits first on
    LD_LIBRARY_PATH, where a bare-name dlopen would find it."""
    here = tmp_path / "here"
    here.mkdir()
    (here / "libcuda.so.1").write_bytes(standin.read_bytes())
    decoy = cc_build(["probe/crash_on_load.c"], "libcuda.so.1")
    monkeypatch.chdir(here)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(decoy.parent))
    return here


def test_relative_libcuda_is_the_named_file(decoy_setup: Path) -> None:
    rep = run_probe(Path("./libcuda.so.1"), timeout=10.0, case_ids=["init.cuInit"])
    assert rep.load is not None and rep.load.status == "pass", rep.load
    assert rep.target == str(decoy_setup / "libcuda.so.1")
    assert rep.cases[0].status == "pass"


def test_relative_libcuda_through_the_probe_command(decoy_setup: Path) -> None:
    from zluda_runner.core.settings import Settings

    request = ProbeRequest(libcuda=Path("./libcuda.so.1"), case_ids=["init.cuInit"], timeout=10.0)
    rep, _ = run_requested_probe(request, Settings())
    assert rep.load is not None and rep.load.status == "pass", rep.load
    assert Path(rep.target).is_absolute()


# ---- item 5: what the library writes cannot pose as the worker ------------------------------------


def test_garbage_on_every_descriptor_is_not_a_result(cc_build) -> None:
    lib = _hostile(cc_build, "HOSTILE_GARBAGE")
    rep = run_probe(lib, timeout=10.0, case_ids=CASES)
    assert rep.load is not None and rep.load.status == "pass", rep.load
    # the library's lines (a result without a status, a forged "loaded" ...) decided nothing
    assert {c.id: c.status for c in rep.cases} == {c: "pass" for c in CASES}


# ---- item 14: memory stays bounded, whatever the library prints ----------------------------------

_BOUNDED = r"""
import json, resource, sys
from pathlib import Path
def vm_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1])
from zluda_runner.probe.runner import run_probe
import zluda_runner.probe.worker, cffi  # the worker's own imports: not what is measured
limit = vm_kib() * 1024 + (int(sys.argv[2]) << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
resource.setrlimit(resource.RLIMIT_CPU, (int(sys.argv[3]), int(sys.argv[3])))
rep = run_probe(Path(sys.argv[1]), timeout=60.0, case_ids=["init.cuInit", "error.name"])
print(json.dumps({c.id: [c.status, c.signal, c.detail] for c in rep.cases}))
"""


def test_output_flood_keeps_memory_bounded(cc_build, tmp_path: Path) -> None:
    """The library writes 512 MiB to stdout, stderr and every other descriptor (no newline), then
    crashes: the probe, limited to 160 MiB of address space above its start, reports the crash."""
    lib = _hostile(cc_build, "HOSTILE_FLOOD")
    env = {**os.environ, "HOSTILE_FLOOD_MB": "512"}
    proc = subprocess.run(
        [sys.executable, "-c", _BOUNDED, str(lib), "160", "120"],
        env=env, capture_output=True, text=True, check=False, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    status, sig, detail = got["init.cuInit"]
    assert (status, sig) == ("crashed", "SIGSEGV"), got
    assert len(detail) < 4000 and "xxxx" in detail  # a bounded tail of what it printed
    assert got["error.name"][0] == "pass"


# ---- item 15: a library that forks: the case crashed, and nothing outlives the probe --------------


def test_fork_then_crash_is_crashed_and_reaped(cc_build, tmp_path: Path, monkeypatch) -> None:
    lib = _hostile(cc_build, "HOSTILE_FORK", "HOSTILE_FORK_CRASH")
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("HOSTILE_PID_FILE", str(pid_file))
    try:
        rep = run_probe(lib, timeout=20.0, case_ids=["init.cuInit", "error.name"])
        first = rep.cases[0]
        assert (first.status, first.signal) == ("crashed", "SIGSEGV"), first
        assert rep.cases[1].status == "pass"
        pids = [int(p) for p in pid_file.read_text().split()]
        assert pids and all(_killed(p) for p in pids)
    finally:
        _kill_left(pid_file)


def test_forked_child_does_not_outlive_the_probe(cc_build, tmp_path: Path, monkeypatch) -> None:
    lib = _hostile(cc_build, "HOSTILE_FORK")
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("HOSTILE_PID_FILE", str(pid_file))
    try:
        rep = run_probe(lib, timeout=20.0, case_ids=CASES)
        assert [c.status for c in rep.cases] == ["pass"] * len(CASES)
        pids = [int(p) for p in pid_file.read_text().split()]
        assert pids and all(_killed(p) for p in pids)
    finally:
        _kill_left(pid_file)


def _kill_left(pid_file: Path) -> None:
    """Test hygiene only: the pids this test's library forked (not a check)."""
    if pid_file.exists():
        for pid in (int(p) for p in pid_file.read_text().split()):
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)


# ---- item 5: a frame that carries the token but is not a result fails its case alone --------------

_FAKE_WORKER = r"""
import json, os, sys
bad = open(os.environ["BAD_FRAME_FILE"], "rb").read()
fd = int(sys.argv[-1])
token = sys.stdin.buffer.readline().strip()
def frame(payload):
    os.write(fd, token + b" " + payload + b"\n")
frame(b'{"event": "started"}')
frame(b'{"event": "loaded"}')
for line in sys.stdin.buffer:
    case = line.strip().decode()
    if case == "init.cuInit":
        frame(bad)
    else:
        result = {"event": "result", "id": case, "status": "pass", "detail": "", "calls": []}
        frame(json.dumps(result).encode())
"""

BAD_FRAMES = {
    "not-utf8": b'{"event": "result", "id": "init.cuInit", "status": "pass\xff\xfe"}',
    "a-list": b"[1, 2, 3]",
    "no-status": b'{"event": "result", "id": "init.cuInit"}',
    "bad-calls": b'{"event": "result", "id": "init.cuInit", "status": "pass", "calls": [{"x": 1}]}',
    "other-case": b'{"event": "result", "id": "error.name", "status": "pass"}',
    "unknown-api": b'{"event": "result", "id": "init.cuInit", "status": "fail", "result_code": 15, '
                   b'"result_api": "nope"}',
    "error-not-a-number": b'{"event": "result", "id": "init.cuInit", "status": "fail", "max_abs_err": "x"}',
    "deep": b"[" * 100_000,
    "unknown-event": b'{"event": "loaded"}',
}


@pytest.mark.parametrize("name", sorted(BAD_FRAMES))
def test_unreadable_result_fails_its_case_alone(name: str, standin: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from zluda_runner.probe import runner

    script = tmp_path / "fake_worker.py"
    script.write_text(_FAKE_WORKER)
    monkeypatch.setattr(runner, "WORKER", (sys.executable, str(script)))
    (tmp_path / "bad").write_bytes(BAD_FRAMES[name])
    env = {**os.environ, "BAD_FRAME_FILE": str(tmp_path / "bad")}
    ids = ["init.driver_version", "init.cuInit", "error.name"]
    rep = run_probe(standin, timeout=20.0, case_ids=ids, env=env)
    got = {c.id: c for c in rep.cases}
    assert got["init.cuInit"].status == "error" and "unreadable" in got["init.cuInit"].detail
    assert (got["init.driver_version"].status, got["error.name"].status) == ("pass", "pass")


def test_frame_reader_keeps_bounded_state() -> None:
    from zluda_runner.core.child import Tail
    from zluda_runner.probe.channel import MAX_FRAME, TAIL_BYTES, FrameReader

    out = Tail(TAIL_BYTES)
    reader = FrameReader(b"TOK ", out)
    events = []
    for _ in range(40):  # 40 MiB without a newline, then a frame after it on the same line
        events += reader.feed(b"x" * (1 << 20))
        assert len(reader.buffer) <= MAX_FRAME + (1 << 20) and len(out.data) <= TAIL_BYTES
    events += reader.feed(b'TOK {"event": "end"}\nplain\nTOK [1]\n')
    assert events[0] == {"event": "end"} and events[1]["event"] == "garbled" and len(events) == 2
    assert out.text(100).endswith("plain")
    events = reader.feed(b"TOK " + b"y" * (3 * MAX_FRAME) + b"\nTOK {\"event\": \"ok\"}\n")
    assert [e["event"] for e in events] == ["garbled", "ok"]


def test_interrupted_probe_leaves_nothing_running(cc_build, tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C (here: the progress callback raising KeyboardInterrupt) during a probe kills the
    worker and what the library forked."""
    lib = _hostile(cc_build, "HOSTILE_FORK")
    pid_file = tmp_path / "pids"
    monkeypatch.setenv("HOSTILE_PID_FILE", str(pid_file))

    def interrupt(_result: object) -> None:
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            run_probe(lib, timeout=20.0, case_ids=CASES, progress=interrupt)
        pids = [int(p) for p in pid_file.read_text().split()]
        assert pids and all(_killed(p) for p in pids)
    finally:
        _kill_left(pid_file)


_TERMINATED_PROBE = r"""
import signal, sys
from pathlib import Path
from zluda_runner.probe.runner import run_probe

def terminated(_result):
    signal.raise_signal(signal.SIGTERM)  # `kill`, a CI job's timeout: while the worker runs

run_probe(Path(sys.argv[1]), timeout=20.0, case_ids=["init.cuInit", "error.name", "device.count"],
          progress=terminated)
print("NOT-REACHED")
"""


def test_a_sigterm_during_a_probe_ends_the_worker_then_us(cc_build, tmp_path: Path) -> None:
    """SIGTERM's default ended zluda-run alone and left the worker (its own process group) on the GPU;
    now the worker and what the library forked are killed first, then we end with 143."""
    lib = _hostile(cc_build, "HOSTILE_FORK")
    pid_file = tmp_path / "pids"
    env = {**os.environ, "HOSTILE_PID_FILE": str(pid_file)}
    try:
        done = subprocess.run([sys.executable, "-c", _TERMINATED_PROBE, str(lib)], env=env,
                              capture_output=True, text=True, timeout=120,
                              preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
        assert done.returncode == 128 + signal.SIGTERM and "NOT-REACHED" not in done.stdout, done.stderr
        assert "Traceback" not in done.stderr
        pids = [int(p) for p in pid_file.read_text().split()]
        assert pids and all(_killed(p) for p in pids)
    finally:
        _kill_left(pid_file)
