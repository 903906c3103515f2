"""The launch memo (commands/launchmemo, issue 28: launch at the interpreter's floor): a plain launch whose
observations did not change is not derived again, and one whose did is.

Soundness is the heart: a full derivation on a fake host tree (``ZLUDA_RUNNER_ROOT``: two KFD nodes, AMD's
ROCm with MIOpen, a stand-in release and target) is remembered; then, for every observation the memo
recorded, that one thing is changed (a file edited, created or removed, a folder entry added, a link
re-pointed, a folder removed) and the next launch must miss and be derived again. The environment, the
folder, the release's files, the plan cache entry, the results store and zluda-run's own code each miss
too. A hit execs exactly what the derivation execs (program, words, environment, folder) and says the same
lines; it imports neither click nor dataclasses nor a stage. What the derivation reads is read through the
recorded readers (an audit hook sees every file opened and folder listed under the fake host).

In-process (the exec caught) where a test drives many launches; in a fresh interpreter where what it
imports is the point.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import put_elf
from tests.doctor.test_doctor import _kfd_node, _write
from zluda_runner.commands import launchmemo
from zluda_runner.commands import memo as memos
from zluda_runner.commands.workload import launch_plain
from zluda_runner.devtools.standin import build_release, build_torch_venv, libs_from_spec
from zluda_runner.release.manifest import default_manifest_path

GFX1100, GFX1036 = 110000, 100306
REPO = Path(__file__).resolve().parents[2]
# the stages (tests/arch/test_layout.py's ranks but core and the command line)
STAGES = ("binfmt", "loader", "release", "inspection", "host", "results", "plan", "telemetry", "launch",
          "conduct", "probe", "trace", "report", "abtest", "doctor", "poc", "finder", "devtools", "api")


class Exec(BaseException):  # not an error: the exec a launch ends in, caught
    """What a launch would exec: the program, its words, its environment, the folder it runs in."""


def _fake_execve(path: str, argv: list[str], env: dict[str, str]) -> None:
    raise Exec(path, list(argv), dict(env), os.getcwd())


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A stand-in release, and a bare virtual environment whose torch looks like a CUDA build (its
    version.py, a libtorch_cuda.so needing libcublas.so.13), as benchmarks/launch_overhead.py builds them."""
    base = tmp_path_factory.mktemp("memo-world")
    spec = {"libcuda.so.1": {"soname": "libcuda.so.1", "links": ["libcuda.so"]},
            "libcublas.so.13": {"soname": "libcublas.so.13",
                                "versions": {"libcublas.so.13": ["cublasCreate_v2"]}}}
    release = build_release(libs_from_spec(spec), base / "zluda", build_dir=base / "build")
    python = build_torch_venv(base, release)
    return {"release": release, "python": python, "base": base}


def _host(root: Path) -> None:
    """A dGPU (gfx1100, 16 GiB of VRAM) beside the CPU, /dev/kfd, amdgpu, AMD's ROCm 6.4.1 with MIOpen."""
    _write(root, "sys/module/amdgpu/version", "6.8.5\n")
    _write(root, "dev/kfd")
    _kfd_node(root, 0, 0, simd=0, cpu_cores=16)
    _kfd_node(root, 1, GFX1100, simd=96, name="Radeon RX 7900 XTX", vram=16 << 30)
    _write(root, "opt/rocm/.info/version", "6.4.1-1\n")
    _write(root, "opt/rocm/include/hip/hip_version.h",
           "#define HIP_VERSION_MAJOR 6\n#define HIP_VERSION_MINOR 4\n")
    put_elf(root / "opt/rocm/lib/libMIOpen.so.1")
    _write(root, "etc/os-release", 'NAME="Ubuntu"\nID=ubuntu\n')


@pytest.fixture
def launch(world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """A plain launch of the stand-in target on a fake host, with its own cache and manifest, and the
    process's exec caught."""
    root = tmp_path / "host"
    _host(root)
    manifest = tmp_path / "data" / "manifest.json"
    manifest.parent.mkdir()
    shutil.copy2(default_manifest_path(), manifest)
    monkeypatch.setenv("ZLUDA_RUNNER_ROOT", str(root))
    for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                "HSA_OVERRIDE_GFX_VERSION", "ZLUDA_RUNNER_MANIFEST", "ZLUDA_RUNNER_RESULTS_DB",
                "ZLUDA_RUNNER_ZLUDA_DIR", "LD_LIBRARY_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(os, "execve", _fake_execve)
    monkeypatch.chdir(tmp_path)
    args = ["--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(world["release"]), "--manifest",
            str(manifest), "--", str(world["python"]), "-c", "pass"]
    return {"args": args, "root": root, "tmp": tmp_path, "cache": tmp_path / "cache", "data": manifest.parent}


def derive(args: list[str]) -> tuple[object, ...]:
    """The full path (recorded and remembered): what it execs."""
    with pytest.raises(Exec) as caught:
        launch_plain(args)
    return caught.value.args


def replayed(args: list[str]) -> tuple[object, ...] | None:
    """The memo's path: what it execs on a hit, None on a miss."""
    try:
        launchmemo.replay(args)
    except Exec as done:
        return done.args
    return None


def warm(args: list[str]) -> tuple[object, ...]:
    """Launched until the memo hits (the first launch plans and the second remembers a warm plan)."""
    for _ in range(3):
        hit = replayed(args)
        if hit is not None:
            return hit
        derive(args)
    raise AssertionError("the launch is never remembered")


def memo_of(args: list[str]) -> dict[str, object]:
    path = launchmemo.memo_path(args, os.environ)
    assert path is not None
    found: dict[str, object] = marshal.loads(Path(path).read_bytes())  # noqa: S302 (our own test's file)
    return found


def test_a_hit_execs_what_the_derivation_execs(launch: dict[str, object], capfd: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    args = launch["args"]
    assert isinstance(args, list)
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0,7")  # a GPU that is not there: the run warns
    derive(args)
    capfd.readouterr()
    derived = derive(args)  # a warm plan: remembered
    said = capfd.readouterr().err
    hit = replayed(args)
    assert hit is not None and hit == derived  # program, words, environment, folder
    assert capfd.readouterr().err == said and said.startswith("warning: ")  # the same lines
    memo = memo_of(args)
    assert memo["env"] == memos.env_digest(os.environ) and memo["schema"] == memos.SCHEMA
    assert not any(value in memo["set"].values() for value in ("", None))  # type: ignore[union-attr]
    assert os.environ["PATH"] not in json.dumps(memo["set"])  # the user's variables are not in it


def _mutate(kind: str, args: list[object], value: object, spare: Path) -> None:
    """Change the one thing observation ``kind`` of ``args`` looked at."""
    path = Path(str(args[0]))
    if kind == "names":
        if path.is_dir():
            (path / "zz-memo-test").write_text("new entry\n")
        else:
            path.mkdir(parents=True)
            (path / "zz-memo-test").write_text("new entry\n")
    elif kind in ("is_dir", "is_file", "exists") and value:
        path.rename(spare)  # gone
    elif kind == "is_dir":
        path.mkdir(parents=True)
    elif kind in ("is_file", "exists"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("new\n")
    elif kind == "readlink":
        if value is not None:
            path.unlink()
        path.symlink_to(f"{value}-elsewhere")
    elif kind == "head" and path.is_file():
        data = bytearray(path.read_bytes())
        data[18] ^= 0xFF  # e_machine: another machine's ELF
        path.write_bytes(bytes(data))
    elif kind == "executable":
        path.chmod(path.stat().st_mode ^ stat.S_IXUSR ^ stat.S_IXGRP ^ stat.S_IXOTH)
    elif path.is_dir():  # a folder's identity: it changes as an entry is added
        (path / "zz-memo-test").write_text("new entry\n")
    elif path.is_file():
        with path.open("ab") as fh:
            fh.write(b"\n# changed\n")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("new\n")


def _restore(saved: dict[Path, Path]) -> None:
    for live, copy in saved.items():
        shutil.rmtree(live)
        shutil.copytree(copy, live, symlinks=True)


def test_every_observation_changed_is_a_miss(launch: dict[str, object], world: dict[str, Path],
                                             tmp_path: Path) -> None:
    """For each observation the memo holds, that one thing changed: the next launch misses (it is
    derived again). What lies outside this test's folders is zluda-run's own code (a code change misses:
    the test below) or the machine's interpreter and loader cache (read by the plan cache's key and
    validity check, which no test may change)."""
    args = launch["args"]
    assert isinstance(args, list)
    warm(args)
    observations = memo_of(args)["observations"]
    assert isinstance(observations, list)
    mine = [o for o in observations if str(o[1][0]).startswith(str(tmp_path))]
    own = (str(REPO / "zluda_runner"), str(REPO / "shims"))  # zluda-run's code and its shims' sources
    outside = {str(o[1][0]) for o in observations if o not in mine and not str(o[1][0]).startswith(own)
               and not str(o[1][0]).startswith(str(world["base"]))}
    # the machine's: the interpreter the target's venv runs, the loader cache the plan cache looks at, the C
    # compiler our redirector is built with (found on PATH, which is in the environment's digest)
    machine = {os.path.realpath(sys.executable), "/etc/ld.so.cache", str(world["python"]), "cc"}
    assert outside <= machine, outside
    kinds = {o[0] for o in mine}
    assert {"read", "names", "is_dir", "exists", "stat", "readlink", "head"} <= kinds, kinds
    assert any("/sys/class/kfd/" in str(o[1][0]) for o in mine)
    saved = {p: tmp_path.parent / f"{tmp_path.name}-saved-{p.name}"
             for p in (launch["root"], launch["cache"], launch["data"])}
    for live, copy in saved.items():
        shutil.copytree(live, copy, symlinks=True)  # type: ignore[arg-type]
    missed = []
    for kind, where, value in mine:
        warm(args)
        assert [kind, where, value] in memo_of(args)["observations"], (kind, where, value)  # type: ignore[operator]
        _mutate(kind, where, value, tmp_path / "gone")
        if replayed(args) is None:
            missed.append((kind, where))
        shutil.rmtree(tmp_path / "gone", ignore_errors=True)
        (tmp_path / "gone").unlink(missing_ok=True)
        _restore(saved)  # type: ignore[arg-type]
    assert missed == [(k, w) for k, w, _ in mine]


def test_the_launch_misses_when_the_release_the_target_or_the_plan_cache_entry_change(
        launch: dict[str, object], world: dict[str, Path], tmp_path: Path) -> None:
    args = launch["args"]
    assert isinstance(args, list)
    warm(args)
    entry = next((tmp_path / "cache" / "plans").glob("*.json"))
    entry.write_text(entry.read_text().replace('"linux"', '"linux" '))  # the entry's bytes
    assert replayed(args) is None
    warm(args)
    release_file = world["release"] / "libcublas.so.13"
    os.utime(release_file, ns=(release_file.stat().st_atime_ns, release_file.stat().st_mtime_ns + 1))
    assert replayed(args) is None  # the plan cache's own check of the release's files
    warm(args)
    lib = next(world["base"].glob("venv/lib/python*/site-packages/torch/lib/libtorch_cuda.so"))
    os.utime(lib, ns=(lib.stat().st_atime_ns, lib.stat().st_mtime_ns + 1))
    assert replayed(args) is None  # the target's files


def test_the_environment_the_folder_and_the_results_store_are_part_of_the_launch(
        launch: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = launch["args"]
    assert isinstance(args, list)
    warm(args)
    monkeypatch.setenv("ZLUDA_RUNNER_MEMO_TEST", "1")  # any variable
    assert replayed(args) is None
    monkeypatch.delenv("ZLUDA_RUNNER_MEMO_TEST")
    assert replayed(args) is not None
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert replayed(args) is None
    monkeypatch.chdir(tmp_path)
    assert replayed(args) is not None
    import sqlite3

    sqlite3.connect(tmp_path / "cache" / "results.db").execute("create table t (x)").connection.close()
    assert replayed(args) is None  # the store the run's notes are read from (its GPU is known here)


def test_a_gpu_added_is_derived_again_with_the_new_default(launch: dict[str, object]) -> None:
    """An integrated GPU appears in the KFD topology: the dedicated-gpu default now chooses the dGPU."""
    args = launch["args"]
    assert isinstance(args, list)
    before = warm(args)
    assert "HIP_VISIBLE_DEVICES" not in before[2]  # type: ignore[operator]
    root = launch["root"]
    assert isinstance(root, Path)
    _kfd_node(root, 2, GFX1036, simd=4, name="AMD Radeon Graphics", cpu_cores=8)
    assert replayed(args) is None
    after = derive(args)
    assert after[2]["HIP_VISIBLE_DEVICES"] == "0"  # type: ignore[index]
    assert warm(args) == after


def test_miopen_removed_is_derived_again(launch: dict[str, object]) -> None:
    args = launch["args"]
    root = launch["root"]
    assert isinstance(args, list) and isinstance(root, Path)
    warm(args)
    (root / "opt/rocm/lib/libMIOpen.so.1").unlink()
    assert replayed(args) is None
    derive(args)
    derive(args)  # remembered again, with what it found
    assert ["head", [str(root / "opt/rocm/lib/libMIOpen.so.1"), 20], None] in memo_of(args)["observations"]  # type: ignore[operator]


@pytest.mark.parametrize("content", [b"", b"not marshal", marshal.dumps({"schema": 999}),
                                     marshal.dumps([1, 2]), marshal.dumps((lambda: 0).__code__)])
def test_a_foreign_or_corrupt_memo_is_a_miss_never_an_error(launch: dict[str, object],
                                                             content: bytes) -> None:
    args = launch["args"]
    assert isinstance(args, list)
    derived = warm(args)
    path = launchmemo.memo_path(args, os.environ)
    assert path is not None
    Path(path).write_bytes(content)
    assert replayed(args) is None
    assert derive(args) == derived  # and the launch goes on, remembered anew
    assert replayed(args) == derived


def test_a_launch_with_what_cannot_be_observed_again_is_not_remembered(launch: dict[str, object]) -> None:
    """A results store on a server (its GPU is known: the run's notes come from there)."""
    args = launch["args"]
    assert isinstance(args, list)
    served = ["--results-db", "postgresql://nobody@127.0.0.1:9/none", *args]
    derive(served)
    derive(served)
    path = launchmemo.memo_path(served, os.environ)
    assert path is not None and not Path(path).exists()


def test_memos_are_bounded(launch: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    args = launch["args"]
    assert isinstance(args, list)
    monkeypatch.setattr(memos, "KEEP", 2)
    for n in range(4):
        monkeypatch.setenv("ZLUDA_RUNNER_MEMO_TEST", str(n))
        warm(args)
    cache = launch["cache"]
    assert isinstance(cache, Path)
    assert len(list((cache / "launches").iterdir())) == 2


# ------------------------------------------------------------------ in a fresh interpreter

_PROBE = """
import json, os, sys
first = set(sys.modules)
def fake_execve(path, argv, env):
    print(json.dumps({"path": path, "argv": list(argv), "env": dict(env), "cwd": os.getcwd(),
                      "imported": sorted(set(sys.modules) - first)}), flush=True)
    os._exit(0)
os.execve = fake_execve
from zluda_runner.cli import main
main()
"""


def _fresh(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, check=True,
                          env=env, cwd=cwd)
    found: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    found["err"] = proc.stderr
    return found


def test_the_hit_path_imports_neither_click_nor_dataclasses_nor_a_stage(launch: dict[str, object]) -> None:
    args, tmp = launch["args"], launch["tmp"]
    assert isinstance(args, list) and isinstance(tmp, Path)
    env = dict(os.environ)
    runs = [_fresh(args, env, tmp) for _ in range(3)]  # planned, remembered, replayed
    derived, hit = runs[1], runs[2]
    assert "zluda_runner.conduct.run" in derived["imported"]  # (the check can fail: a derivation imports it)
    imported = hit["imported"]
    assert isinstance(imported, list)
    stages = [m for m in imported if m.split(".")[:2][-1] in STAGES and m.startswith("zluda_runner.")]
    assert stages == [] and "click" not in imported and "dataclasses" not in imported, imported
    assert {k: hit[k] for k in ("path", "argv", "env", "cwd", "err")} == \
        {k: derived[k] for k in ("path", "argv", "env", "cwd", "err")}


def test_a_code_change_misses(launch: dict[str, object], tmp_path: Path) -> None:
    """zluda-run's own modules, as the derivation loaded them: one edited, or a new version, is a miss."""
    args = launch["args"]
    assert isinstance(args, list)
    copy = tmp_path / "pkg"
    for folder in ("zluda_runner", "shims", "manifests"):  # the package and its data, as a checkout has them
        shutil.copytree(REPO / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(copy)}
    runs = [_fresh(args, env, tmp_path) for _ in range(3)]
    assert "zluda_runner.conduct.run" not in runs[2]["imported"]  # remembered
    with (copy / "zluda_runner/plan/defaults.py").open("a") as fh:
        fh.write("\n# an edit\n")
    assert "zluda_runner.conduct.run" in _fresh(args, env, tmp_path)["imported"]
    assert "zluda_runner.conduct.run" not in _fresh(args, env, tmp_path)["imported"]
    version = copy / "zluda_runner/core/version.py"
    version.write_text(version.read_text().replace('__version__ = "', '__version__ = "9'))
    assert "zluda_runner.conduct.run" in _fresh(args, env, tmp_path)["imported"]


# an audit hook that sees each file opened for reading and each folder listed, and the trace recorded
AUDIT_HOOK = """
import json, os, sys
seen = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
        mode = args[1] if isinstance(args[1], str) else ""
        if (mode and "r" in mode and "+" not in mode) or (not mode and flags & 3 == os.O_RDONLY):
            seen.append(os.fsdecode(args[0]))
    elif event in ("os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        seen.append(os.fsdecode(args[0]))
sys.addaudithook(hook)
from zluda_runner.core import observe
trace = []
real_stop = observe.stop
def stop():
    if observe._TRACE:
        trace.extend(observe._TRACE[0].observations())
    real_stop()
observe.stop = stop
"""
_AUDIT = AUDIT_HOOK + """
def fake_execve(path, argv, env):
    print(json.dumps({"seen": seen, "trace": trace}), flush=True)
    os._exit(0)
os.execve = fake_execve
from zluda_runner.commands.workload import launch_plain
launch_plain(sys.argv[1:])
"""


def test_every_file_the_derivation_reads_is_observed(launch: dict[str, object], tmp_path: Path) -> None:
    """An audit hook sees each file opened for reading and each folder listed while a launch is derived:
    each is an observation of its trace (a read past the recorded readers would not be), but Python's own
    files, zluda-run's code (its modules, each observed by its size and time, and their folders) and the
    memos' own folder."""
    args = launch["args"]
    assert isinstance(args, list)
    for _ in range(2):  # planned, then derived with a warm plan (what is remembered)
        proc = subprocess.run([sys.executable, "-c", _AUDIT, *args], capture_output=True, text=True,
                              check=True, cwd=tmp_path)
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    observed = {o[1][0] for o in found["trace"] if o[0] in ("read", "head", "names")}
    python = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.realpath(sys.base_prefix)})
    own = str(REPO / "zluda_runner")
    memos = str(tmp_path / "cache" / "launches")  # the memo's own folder (the oldest pruned)
    read = {p for p in found["seen"] if not p.startswith((*python, own, memos))
            and p not in (".", os.getcwd(), "/dev/null") and not p.endswith((".py", ".pyc", ".pth"))}
    assert any("/host/" in p for p in read), read  # (the hook sees the host's files)
    assert read <= observed, sorted(read - observed)


@pytest.fixture(autouse=True)
def _no_memo_leaks() -> Iterator[None]:
    yield
    from zluda_runner.core import observe

    observe.stop()


def test_a_workload_that_cannot_start_is_said_once(launch: dict[str, object], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Its exec fails (a #! interpreter that is not there) on every launch: remembered, replayed, and the
    error said by the derived launch, its lines said once and its exit 127 kept."""
    args = launch["args"]
    assert isinstance(args, list)
    script = tmp_path / "work"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(0o755)
    argv = [*args[:args.index("--") + 1], str(script)]
    env = {**os.environ, "HIP_VISIBLE_DEVICES": "0,7"}  # a line said: a GPU that is not there
    runs = [subprocess.run([sys.executable, "-m", "zluda_runner", *argv], capture_output=True, text=True,
                           env=env, cwd=tmp_path) for _ in range(3)]
    assert launchmemo.memo_path(argv, env) and Path(str(launchmemo.memo_path(argv, env))).exists()
    assert [r.returncode for r in runs] == [127, 127, 127]
    assert runs[2].stderr == runs[1].stderr and runs[2].stderr.count("warning: ") == 1
