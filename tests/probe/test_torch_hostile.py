"""The torch-level probes (quick and OpInfo) against a hostile target interpreter (issue 11, items
5, 14, 15 applied to them): non-UTF-8 bytes and malformed event lines, hundreds of MiB of
output, a process forked during an op that holds stdout open, then a crash. The op is "crashed",
the other ops are read, memory stays bounded (RLIMIT_AS in a child), nothing outlives the probe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.probe.test_probe_hostile import _kill_left, _killed

FAKE = r"""#!{python}
import json, os, signal, sys
args = sys.argv[2:]
done = set()
if "--done-file" in args:
    done = set(open(args[args.index("--done-file") + 1]).read().split())
out = sys.stdout.buffer
def emit(payload):
    out.write(b"\nZLUDA_RUNNER_TORCH_PROBE " + payload + b"\n")
    out.flush()
out.write(b"\xff\xfe not UTF-8 \xc3\x28\n")
sys.stderr.buffer.write(b"\xff\xfe not UTF-8 on stderr\n")
if os.environ.get("FAKE_MALFORMED") == "1":
    emit(b"[1, 2, 3]")
    emit(b'{"event": "op", "id": "\xff\xfe"}')
    emit(b'{"event": "op", "id": "zzz", "status": 42, "duration_s": "slow", "max_abs_err": "x"}')
flood = int(os.environ.get("FAKE_FLOOD_MB", "0"))
block = b"x" * (1 << 20)
for _ in range(flood):
    out.write(block)
    sys.stderr.buffer.write(block)
ops = ["a@float32", "b@float32", "c@float32"]
emit(json.dumps({"event": "info", "ops": ops, "areas": {o: "x" for o in ops}, "available": True,
                 "torch": "0.fake"}).encode())
for op in ops:
    if op in done:
        continue
    emit(json.dumps({"event": "begin", "id": op}).encode())
    if op.startswith("b"):
        r, w = os.pipe()
        if os.fork() == 0:
            with open(os.environ["FAKE_PID_FILE"], "a") as f:
                f.write(f"{os.getpid()}\n")
            os.write(w, b"k")
            signal.pause()
        os.read(r, 1)
        os.kill(os.getpid(), signal.SIGSEGV)
    emit(json.dumps({"event": "op", "id": op, "status": "pass", "op": op.split("@")[0],
                     "dtype": "float32", "duration_s": 0.01}).encode())
emit(b'{"event": "end"}')
"""

_RUN = r"""
import json, os, resource, sys
def vm_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1])
from zluda_runner.probe.torch_probe import run_torch_probe
from zluda_runner.probe.opinfo_probe import run_opinfo_probe
python, kind, extra_mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
if extra_mib:
    limit = vm_kib() * 1024 + (extra_mib << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (120, 120))
if kind == "quick":
    rep = run_torch_probe(python, dict(os.environ), timeout=60)
else:
    rep = run_opinfo_probe(python, dict(os.environ), dtypes=["float32"], op_timeout=20)
print(json.dumps({"load": rep.load.status if rep.load else None,
                  "cases": {c.id: [c.status, c.signal, c.detail] for c in rep.cases}}))
"""


def _fake(tmp_path: Path) -> str:
    script = tmp_path / "fake-python"
    script.write_text(FAKE.replace("{python}", sys.executable))
    script.chmod(0o755)
    return str(script)


def _run(tmp_path: Path, kind: str, flood_mib: int = 0, limit_mib: int = 0,
         malformed: bool = True) -> dict:
    pid_file = tmp_path / "pids"
    env = {**os.environ, "FAKE_PID_FILE": str(pid_file), "FAKE_FLOOD_MB": str(flood_mib),
           "FAKE_MALFORMED": "1" if malformed else "0"}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _RUN, _fake(tmp_path), kind, str(limit_mib)],
            env=env, capture_output=True, text=True, check=False, cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        got: dict = json.loads(proc.stdout.strip().splitlines()[-1])
        pids = [int(p) for p in pid_file.read_text().split()]
        got["forked_gone"] = bool(pids) and all(_killed(p) for p in pids)
        return got
    finally:
        _kill_left(pid_file)


@pytest.mark.parametrize("kind", ["quick", "opinfo"])
def test_hostile_interpreter_crash_after_fork(kind: str, tmp_path: Path) -> None:
    got = _run(tmp_path, kind)
    assert got["load"] == "pass"
    cases = got["cases"]
    assert set(cases) == {"a@float32", "b@float32", "c@float32"}  # "zzz" was never planned
    assert cases["a@float32"][0] == cases["c@float32"][0] == "pass"
    assert cases["b@float32"][:2] == ["crashed", "SIGSEGV"], cases["b@float32"]
    assert got["forked_gone"]


@pytest.mark.parametrize("kind", ["quick", "opinfo"])
def test_hostile_interpreter_flood_keeps_memory_bounded(kind: str, tmp_path: Path) -> None:
    """512 MiB on stdout (no newline) and on stderr, under 160 MiB of address space more."""
    got = _run(tmp_path, kind, flood_mib=512, limit_mib=160, malformed=False)
    cases = got["cases"]
    assert cases["b@float32"][:2] == ["crashed", "SIGSEGV"]
    assert len(cases["b@float32"][2]) < 4000
