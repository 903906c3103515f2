"""What an interpreter says of itself has one home (inspection/selffacts): a child runs that module's own
source; when the target is the interpreter running the ``zluda-run`` command line as it started, the same
function answers here, and no second interpreter is started (issue 28: ``releases`` under Wine paid for a
second python.exe). Every field is the child's: compared in fresh interpreters started as a console script
is (a script), as ``-m`` and as ``-c``, with a torch found through the working folder and PYTHONPATH."""

from __future__ import annotations

import ast
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from zluda_runner.inspection import selffacts

ROOT = Path(__file__).resolve().parents[2]
# in a fresh interpreter: the command line's start remembered, then both answers and whether a child ran
COMPARE = """
import json, os, sys
from zluda_runner.core import child as core_child, startstate
from zluda_runner.inspection import interpreter, selffacts
startstate.remember()
start = startstate.at_start()
child = interpreter._child_facts(sys.executable, sys.executable, None)
started = []
real_run_child = core_child.run_child
def counting_run_child(*args, **kwargs):
    started.append(args[0][0])
    return real_run_child(*args, **kwargs)
core_child.run_child = counting_run_child
probed = interpreter.probe_interpreter(sys.executable)
here = selffacts.facts(selffacts.child_path(start[0]))
print(json.dumps({"here": here, "child": child, "children": started, "probed": probed.to_dict(),
                  "started_here": selffacts.started_here(sys.executable, os.environ, start)}))
"""


def _fake_torch(folder: Path, version: str) -> Path:
    torch = folder / "torch"
    torch.mkdir(parents=True)
    (torch / "__init__.py").write_text("raise ImportError('never imported')\n")
    (torch / "version.py").write_text(f"__version__ = '{version}'\ncuda = '12.8'\n")
    return torch


def _compare(tmp_path: Path, form: str, *, flags: tuple[str, ...] = (),
             env: dict[str, str] | None = None) -> dict[str, object]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "compare_facts.py").write_text(COMPARE)
    # (the script and -m's module are found through sys.path[0]: its folder, the working folder)
    run_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    start = {"script": [str(work / "compare_facts.py")], "m": ["-m", "compare_facts"], "c": ["-c", COMPARE]}
    cwd = tmp_path / "elsewhere" if form == "script" else work  # a script runs from another folder
    cwd.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, *flags, *start[form]], cwd=cwd, env=run_env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    found: dict[str, object] = json.loads(proc.stdout)
    return found


@pytest.mark.parametrize("form", ["script", "m", "c"])
def test_the_facts_read_here_are_the_child_s(tmp_path: Path, form: str) -> None:
    """A torch in the working folder is found (``-c`` puts it first on sys.path); one beside a script
    started from elsewhere is not (the script's folder is first here, not in the child)."""
    beside = _fake_torch(tmp_path / "work", "2.9.0")
    in_cwd = _fake_torch(tmp_path / "elsewhere", "2.8.0")
    torch = in_cwd if form == "script" else beside
    got = _compare(tmp_path, form)
    assert got["started_here"] is True
    assert got["here"] == got["child"]
    assert got["children"] == []  # probe_interpreter read it here
    assert got["probed"]["torch_path"] == str(torch) and got["probed"]["executable"] == sys.executable
    assert got["probed"]["machine"] == platform.machine()  # (read without platform.uname())


def test_a_torch_on_pythonpath_is_found_alike(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    torch = _fake_torch(extra, "2.10.0")
    got = _compare(tmp_path, "script", env={"PYTHONPATH": os.pathsep.join([str(ROOT), str(extra)])})
    assert got["here"] == got["child"] and got["children"] == []
    assert got["probed"]["torch_path"] == str(torch)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="-P and PYTHONSAFEPATH are Python 3.11's")
def test_a_safe_path_start_keeps_its_first_entry(tmp_path: Path) -> None:
    _fake_torch(tmp_path / "work", "2.9.0")  # not on sys.path with PYTHONSAFEPATH: found by neither
    got = _compare(tmp_path, "script", env={"PYTHONSAFEPATH": "1"})
    assert got["here"] == got["child"] and got["children"] == []
    assert got["probed"]["torch_path"] != str(tmp_path / "work" / "torch")
    assert str(tmp_path / "work") not in got["here"]["startup"]["sys_path"]


@pytest.mark.parametrize("flag", ["-I", "-E", "-s", "-S", "-sB", "-BE"])
def test_an_interpreter_started_with_a_shaping_option_is_asked_as_a_child(tmp_path: Path, flag: str) -> None:
    """(-I/-E ignore PYTHONPATH: the script is started by path, its own folder first on sys.path.)"""
    got = _compare(tmp_path, "script", flags=(flag,))
    assert got["started_here"] is False and got["children"] == [sys.executable]


@pytest.mark.parametrize("flag", ["-B", "-u", "-X", "-W"])
def test_an_option_that_shapes_nothing_keeps_it_here(tmp_path: Path, flag: str) -> None:
    flags = {"-X": ("-X", "utf8"), "-W": ("-W", "ignore")}.get(flag, (flag,))
    got = _compare(tmp_path, "script", flags=flags)
    assert got["started_here"] is True and got["here"] == got["child"] and got["children"] == []


def test_which_interpreter_and_environment_is_this_one(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "-m", "zluda_runner"], raising=False)
    assert not selffacts.started_here(sys.executable, os.environ, None)  # a library caller: never asked here
    start = (list(sys.path), dict(os.environ))
    assert selffacts.started_here(sys.executable, {**os.environ, "HIP_VISIBLE_DEVICES": "1"}, start)
    assert not selffacts.started_here(sys.executable, {**os.environ, "PYTHONPATH": str(tmp_path)}, start)
    assert not selffacts.started_here(sys.executable, {**os.environ, "PYTHONNOUSERSITE": "1"}, start)
    assert not selffacts.started_here(sys.executable, os.environ, (start[0], {**os.environ, "HOME": "/x"}))
    linked = tmp_path / "python-other-name"
    linked.symlink_to(sys.executable)  # the same file by another name (a venv's python3 beside python)
    assert not selffacts.started_here(str(linked), os.environ, start)
    for argv in (["py", "-I", "x.py"], ["py", "-Wignore", "-sc", "pass"], ["py", "-X", "utf8", "-P", "x.py"]):
        monkeypatch.setattr(sys, "orig_argv", argv)
        assert not selffacts.started_here(sys.executable, os.environ, start), argv
    for argv in (["py", "-W", "-s", "x.py"], ["py", "-c", "-s"], ["py", "x.py", "-I"],
                 ["py", "-Xfrozen_modules=off", "-m", "m"]):
        monkeypatch.setattr(sys, "orig_argv", argv)
        assert selffacts.started_here(sys.executable, os.environ, start), argv


def test_the_command_line_remembers_its_start() -> None:
    """(A caller of ``main(argv)`` -- a test, another program -- is no command line: nothing remembered.)"""
    code = ("import json, sys\nfrom zluda_runner.cli import main\nfrom zluda_runner.core import startstate\n"
            "try:\n    main(None if sys.argv[1] == 'own' else [])\nexcept SystemExit:\n    pass\n"
            "start = startstate.at_start()\nprint(json.dumps(start and start[0] == sys.path))")
    for words, remembered in ((["own", "--definitely-no-option"], "true"), (["given"], "null")):
        proc = subprocess.run([sys.executable, "-c", code, *words], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
        assert proc.stdout.strip() == remembered, proc.stderr


def test_the_child_s_script_is_the_module_and_reads_as_python_3_7() -> None:
    from zluda_runner.inspection.interpreter import _script

    source = _script(selffacts)
    assert source == Path(selffacts.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 7))
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert imported and not [m for m in imported if m.startswith("zluda_runner")]
