"""The command memo (commands/commandmemo, issue 28: ``releases`` under Wine at 3x the interpreter's floor):
``zluda-run releases`` whose observations did not change says what it said, byte for byte, with its exit
code, without importing click, dataclasses or a stage; each input changed is a miss that derives again.

Each run is a fresh interpreter started as the command line is (``python -c`` calling ``cli.main``), on a
fake host (``ZLUDA_RUNNER_ROOT``: a GPU, AMD's ROCm), with its own cache and folder; the target torch is a
stand-in found first on the interpreter's ``sys.path`` (``PYTHONPATH``), as the command finds this
interpreter's own. Whether a run was replayed is told by what it imported (written at exit to a file).
"""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.commands.test_launch_memo import AUDIT_HOOK, STAGES, _host
from tests.httpserve import serving
from zluda_runner.commands import commandmemo
from zluda_runner.commands import memo as memos
from zluda_runner.release.manifest import default_manifest_path

REPO = Path(__file__).resolve().parents[2]
RUN = ("import atexit, sys\nout = sys.argv.pop(1)\n"
       "atexit.register(lambda: open(out, 'w').write('\\n'.join(sorted(sys.modules))))\n"
       "from zluda_runner.cli import main\nmain()\n")
TORCH_VERSION = "__version__ = '2.8.0+cu128'\ncuda = '12.8'\nhip = None\n"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, object]:
    root = tmp_path / "host"
    _host(root)
    torch = tmp_path / "site" / "torch"
    torch.mkdir(parents=True)
    (torch / "__init__.py").write_text("")
    (torch / "version.py").write_text(TORCH_VERSION)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ZLUDA_RUNNER_", "HIP_", "ROCR_", "CUDA_",
                                                                    "HSA_", "COLUMNS"))}
    env.update({"ZLUDA_RUNNER_ROOT": str(root), "ZLUDA_RUNNER_CACHE": str(tmp_path / "cache"),
                "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(REPO)])})
    return {"env": env, "root": root, "torch": torch, "work": work, "cache": tmp_path / "cache",
            "mods": tmp_path / "modules.txt"}


def run(world: dict[str, object], *words: str, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> tuple[bytes, bytes, int, bool]:
    """stdout, stderr, exit code, and whether it was replayed (no click imported)."""
    mods = world["mods"]
    assert isinstance(mods, Path)
    proc = subprocess.run([sys.executable, "-c", RUN, str(mods), *words], capture_output=True, timeout=120,
                          env=env or world["env"], cwd=cwd or world["work"], check=False)  # type: ignore[arg-type]
    imported = mods.read_text().split("\n")
    replayed = "click" not in imported
    if replayed:  # what a hit imports: neither click nor dataclasses nor a stage
        stages = [m for m in imported if m.startswith("zluda_runner.") and m.split(".")[1] in STAGES]
        assert stages == [] and "dataclasses" not in imported, imported
    return proc.stdout, proc.stderr, proc.returncode, replayed


def derived_then_replayed(world: dict[str, object], *words: str, **kw: object) -> tuple[bytes, bytes, int]:
    """The command derived (and remembered), then replayed: the same bytes and exit code."""
    first = run(world, *words, **kw)  # type: ignore[arg-type]
    again = run(world, *words, **kw)  # type: ignore[arg-type]
    assert not first[3] and again[3], (first, again)
    assert again[:3] == first[:3]
    return first[:3]


@pytest.mark.parametrize("words", [[], ["--json"], ["--all"], ["--os", "windows", "--cuda", "cu118"],
                                   ["--hip", "1.0", "--json"], ["--cache-dir", "elsewhere", "releases"]],
                         ids=" ".join)
def test_a_hit_says_what_the_derivation_says(world: dict[str, object], words: list[str]) -> None:
    words = words if words[-1:] == ["releases"] else ["releases", *words]
    out, _, code = derived_then_replayed(world, *words)
    assert code in (0, 3) and out
    if "--json" in words:
        json.loads(out)  # a whole JSON document, replayed too
    if "--hip" in words:
        assert code == 3  # nothing fits: the exit code is remembered


def test_each_input_changed_is_a_miss_that_derives_again(world: dict[str, object], tmp_path: Path) -> None:
    env = world["env"]
    assert isinstance(env, dict)
    before = derived_then_replayed(world, "releases", "--json")
    root = world["root"]
    assert isinstance(root, Path)
    (root / "opt/rocm/.info/version").write_text("6.2.4-1\n")  # the host's HIP
    (root / "opt/rocm/include/hip/hip_version.h").write_text("#define HIP_VERSION_MAJOR 6\n"
                                                             "#define HIP_VERSION_MINOR 2\n")
    out, err, code, replayed = run(world, "releases", "--json")
    assert not replayed and json.loads(out)["constraints"] != json.loads(before[0])["constraints"]
    assert run(world, "releases", "--json") == (out, err, code, True)  # remembered anew
    torch = world["torch"]
    assert isinstance(torch, Path)
    (torch / "version.py").write_text(TORCH_VERSION.replace("12.8", "11.8"))  # the target's torch
    out, _, _, replayed = run(world, "releases", "--json")
    assert not replayed and json.loads(out)["constraints"]["cuda"] == 11
    (torch / "version.py").write_text(TORCH_VERSION)
    assert not run(world, "releases", "--json")[3]
    assert run(world, "releases", "--json")[3]
    # any variable, the folder, the terminal's width (COLUMNS), the words: each another memo
    for changed in ({**env, "ZLUDA_RUNNER_MEMO_TEST": "1"}, {**env, "COLUMNS": "60"}):
        assert not run(world, "releases", env=changed)[3]
        assert run(world, "releases", env=changed)[3]
    other = tmp_path / "other"
    other.mkdir()
    assert not run(world, "releases", cwd=other)[3] and run(world, "releases", cwd=other)[3]
    narrow = run(world, "releases", env={**env, "COLUMNS": "60"})[0]
    assert narrow != run(world, "releases")[0]  # (the width is the view's: another memo, another text)
    assert not run(world, "releases", "--channel", "preview")[3]


class _Manifest(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def manifest_server() -> Iterator[tuple[str, type[_Manifest]]]:
    handler = type("Handler", (_Manifest,), {})
    with serving(handler) as base:
        yield f"{base}/zluda-releases.json", handler


def test_a_manifest_update_is_a_miss(world: dict[str, object], manifest_server: tuple[str, type[_Manifest]],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The manifest replaced by ``manifest update`` (the project's own path): the next listing says it."""
    from zluda_runner import Options, update_manifest

    before = derived_then_replayed(world, "releases", "--json")
    url, handler = manifest_server
    data = json.loads(default_manifest_path().read_text())
    data["manifest_version"] = int(data["manifest_version"]) + 1
    handler.body = json.dumps(data).encode()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    cache = world["cache"]
    assert isinstance(cache, Path)
    assert update_manifest(url, Options(cache_dir=cache)).replaced
    out, _, _, replayed = run(world, "releases", "--json")
    assert not replayed
    assert json.loads(out)["manifest"]["manifest_version"] == data["manifest_version"]
    assert json.loads(before[0])["manifest"]["manifest_version"] == data["manifest_version"] - 1
    assert run(world, "releases", "--json")[3]


def _memo(world: dict[str, object], *words: str) -> Path:
    env = world["env"]
    assert isinstance(env, dict)
    here = os.getcwd()
    os.chdir(str(world["work"]))
    try:
        path = commandmemo.memo_path(list(words), env)
    finally:
        os.chdir(here)
    assert path is not None
    return Path(path)


@pytest.mark.parametrize("content", [b"", b"not marshal", marshal.dumps({"schema": 999}),
                                     marshal.dumps([1, 2]), marshal.dumps((lambda: 0).__code__),
                                     b"\0" * (memos.MEMO_BYTES + 1)], ids=range(6))
def test_a_foreign_corrupt_or_oversized_memo_is_a_miss_never_an_error(world: dict[str, object],
                                                                       content: bytes) -> None:
    said = derived_then_replayed(world, "releases")
    memo = _memo(world, "releases")
    assert memo.is_file()
    memo.write_bytes(content)
    again = run(world, "releases")
    assert again == (*said, False)
    assert run(world, "releases") == (*said, True)  # remembered anew


def test_a_memo_of_another_day_or_with_another_answer_is_a_miss(world: dict[str, object]) -> None:
    said = derived_then_replayed(world, "releases")
    memo_file = _memo(world, "releases")
    memo = marshal.loads(memo_file.read_bytes())  # noqa: S302 (our own test's file)
    today = next(o for o in memo["observations"] if o[0] == "today")
    today[2] = [today[2][0] - 1, *today[2][1:]]  # recorded a year ago: the manifest's age is another
    memo_file.write_bytes(marshal.dumps(memo))
    assert run(world, "releases") == (*said, False)
    memo = marshal.loads(memo_file.read_bytes())  # noqa: S302
    memo["said"] = [[0, "something else\n"]]  # what is said is what was derived, or nothing
    memo_file.write_bytes(marshal.dumps(memo))
    assert run(world, "releases")[3]  # (the observations hold: replayed as remembered)
    assert run(world, "releases")[0] == b"something else\n"


def test_what_cannot_be_observed_again_writes_no_memo(world: dict[str, object], tmp_path: Path) -> None:
    """The target is another interpreter (a script that runs this one): asked in a child, so no memo; an
    error (a manifest that is not there) neither."""
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    words = ("--python", str(wrapper), "releases")
    first, second = run(world, *words), run(world, *words)
    assert first[2] == 0 and not first[3] and not second[3] and first[:3] == second[:3]
    assert not _memo(world, *words).exists()
    missing = ("--manifest", str(tmp_path / "none.json"), "releases")
    failed = run(world, *missing)
    assert failed[2] != 0 and not _memo(world, *missing).exists()


def test_a_cache_where_no_memo_can_be_written_only_costs_speed(world: dict[str, object]) -> None:
    cache = world["cache"]
    assert isinstance(cache, Path)
    cache.mkdir()
    (cache / "commands").write_text("a file where the memos' folder would be\n")
    first, second = run(world, "releases"), run(world, "releases")
    assert first[2] == 0 and first[:3] == second[:3] and not second[3]


def test_cache_clean_removes_the_memos(world: dict[str, object]) -> None:
    derived_then_replayed(world, "releases")
    memo = _memo(world, "releases")
    assert memo.is_file()
    _, _, code, _ = run(world, "cache", "clean")
    assert code == 0 and not memo.exists()
    assert not run(world, "releases")[3]


_AUDIT = AUDIT_HOOK + """
import atexit
atexit.register(lambda: print(json.dumps({"seen": seen, "trace": trace}), file=sys.__stderr__, flush=True))
from zluda_runner.cli import main
main()
"""


def test_every_file_a_derivation_reads_is_observed(world: dict[str, object]) -> None:
    """An audit hook sees each file opened for reading and each folder listed while ``releases`` is
    derived: each is an observation of its trace, but Python's own files, zluda-run's code (observed by
    size and time) and the memos' own folder."""
    env, work = world["env"], world["work"]
    assert isinstance(env, dict) and isinstance(work, Path)
    proc = subprocess.run([sys.executable, "-c", _AUDIT, "releases", "--json"], capture_output=True,
                          text=True, env=env, cwd=work, timeout=120, check=True)
    found = json.loads(proc.stderr.strip().splitlines()[-1])
    observed = {o[1][0] for o in found["trace"] if o[0] in ("read", "head", "names")}
    python = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.realpath(sys.base_prefix)})
    own, memos_folder = str(REPO / "zluda_runner"), str(world["cache"] / "commands")  # type: ignore[operator]
    read = {p for p in found["seen"] if not p.startswith((*python, own, memos_folder))
            and p not in (".", "", str(work), "/dev/null") and not p.endswith((".py", ".pyc", ".pth"))}
    torch = world["torch"]
    assert str(torch / "version.py") in observed and any("/host/" in p for p in read), read  # type: ignore[operator]
    assert read <= observed, sorted(read - observed)
