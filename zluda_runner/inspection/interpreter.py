"""The target interpreter: which Python a command runs, where its torch is (found, never imported)."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.core.errors import TargetError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.inspection.profile import PythonStartup, TorchInfo

if TYPE_CHECKING:
    from types import ModuleType

PROBE_TIMEOUT_S = 60
_PYTHON_NAME = re.compile(
    r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?[tdmu]*(?:-dbg)?(?:\.exe)?$|^pythonw(?:\.exe)?$", re.IGNORECASE
)

# --------------------------------------------------------------------------- interpreter


def interpreter_for_command(argv: Sequence[str]) -> str | None:
    """The Python interpreter a workload command runs, or None if it is not a Python command.

    ``python``, ``python3.11``, a path to a venv's python, or a script (found on
    PATH or by path) whose ``#!`` line names a Python interpreter.
    """
    if not argv:
        return None
    first = argv[0]
    exe = _which(first)
    if _PYTHON_NAME.match(Path(first).name):
        return exe
    if exe is None:
        return None
    interp = _shebang_interpreter(Path(exe))
    if interp and _PYTHON_NAME.match(Path(interp).name):
        return _which(interp)
    return None


def _which(cmd: str) -> str | None:
    if os.sep in cmd or (os.altsep and os.altsep in cmd):
        p = Path(cmd).expanduser()
        return str(p.absolute()) if p.is_file() else None
    import shutil

    return shutil.which(cmd)


def _shebang_interpreter(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        return rest[0] if rest else None
    return words[0]


@dataclass(frozen=True)
class InterpreterFacts(JsonMixin):
    executable: str
    version: str
    platform: str
    exec_prefix: str
    machine: str | None
    site_packages: list[str]
    torch_path: str | None
    torch_version_py: str | None
    errors: list[str]
    startup: PythonStartup | None = None


def probe_interpreter(python: str, *, env: Mapping[str, str] | None = None) -> InterpreterFacts:
    """What interpreter ``python`` says of itself (:mod:`zluda_runner.inspection.selffacts`), as it would
    with ``env``: read here when it is the interpreter running the ``zluda-run`` command line as it
    started (:func:`~zluda_runner.inspection.selffacts.started_here`), else by running it;
    :class:`TargetError` if it cannot run."""
    from zluda_runner.core.startstate import at_start
    from zluda_runner.inspection import selffacts

    exe = _which(python) or python
    start = at_start()
    if start is not None and selffacts.started_here(exe, os.environ if env is None else env, start):
        path = selffacts.child_path(start[0])
        data: object = selffacts.facts(path)
        _observe_facts(path, data)
    else:
        data = _child_facts(python, exe, env)
    if not isinstance(data, dict):  # (the child's answer is checked there)
        raise TypeError("facts expected")
    torch = data.get("torch") or {}
    return InterpreterFacts(
        executable=data.get("executable") or exe,
        version=data.get("version", "?"),
        platform=data.get("platform", "?"),
        exec_prefix=data.get("exec_prefix", ""),
        machine=data.get("machine"),
        site_packages=list(data.get("site_packages") or []),
        torch_path=torch.get("path"),
        torch_version_py=torch.get("version_py"),
        errors=list(data.get("errors") or []),
        startup=startup_of(data.get("startup")),
    )


def _observe_facts(path: list[str], data: object) -> None:
    """What :func:`~zluda_runner.inspection.selffacts.facts` read in this process, as the observations a
    memo makes again (:mod:`zluda_runner.core.observe`; the interpreter, its ``sys.path`` at start, its
    flags and its environment are the memo's identity): in each ``sys.path`` entry searched up to the one
    that holds torch, what the path finder looks for there (``torch`` as a folder, its ``__init__``, a
    module file of each suffix; a zip file by its size and time), torch's folder and version.py, the
    ``._pth`` files start-up would read. Torch found by another finder than ``sys.path``'s cannot be."""
    from importlib.machinery import all_suffixes

    from zluda_runner.core import observe
    from zluda_runner.inspection.selffacts import pth_candidates

    if not observe.recording() or not isinstance(data, dict):
        return
    torch = data.get("torch") or {}
    folder = torch.get("path") if isinstance(torch, dict) else None
    for pth in pth_candidates():
        observe.note_file(pth, 1 << 20)
    for entry in path:
        where = entry or "."  # (the working folder: -c's first entry)
        if not observe.is_dir(where):
            observe.stat_id(where)  # a zip file on sys.path, or nothing
            continue
        base = os.path.join(where, "torch")
        if observe.is_dir(base):
            observe.names(base)
        for suffix in all_suffixes():
            observe.exists(base + suffix)
        if folder and os.path.abspath(folder) == os.path.abspath(base):
            observe.read(os.path.join(folder, "version.py"), 1 << 20)
            return
    if folder:
        observe.taint("torch found by another finder than sys.path's")


def _child_facts(python: str, exe: str, env: Mapping[str, str] | None) -> object:
    """The facts ``exe`` prints running :mod:`~zluda_runner.inspection.selffacts`'s source as its script."""
    from zluda_runner.core.child import json_line, run_child
    from zluda_runner.inspection import selffacts

    proc = run_child([exe, "-c", _script(selffacts)], timeout=PROBE_TIMEOUT_S, env=env)
    if proc.start_error is not None:
        raise TargetError(
            f"the interpreter {python} does not run: {proc.start_error}",
            hint="pass {opt:python} with the path of the Python that runs your workload "
            "(e.g. .venv/bin/python)",
        )
    if proc.timed_out:
        raise TargetError(
            f"the interpreter {python} did not answer within {PROBE_TIMEOUT_S} s",
            hint="check that it starts (run it with -c pass) or pass another {opt:python}",
        )
    data = json_line(proc.stdout, selffacts.MARK)
    if proc.returncode != 0 or not isinstance(data, dict):
        raise TargetError(
            f"the interpreter {python} does not run (exit {proc.returncode}): {proc.tail()}",
            hint="pass {opt:python} with a working Python interpreter (3.8 or newer) that has torch "
            "installed",
        )
    return data


def _script(module: ModuleType) -> str:
    """A module's own source, run as a child's ``-c`` script (its ``__main__`` part answers)."""
    from importlib.abc import InspectLoader

    loader = module.__spec__.loader if module.__spec__ else None
    source = loader.get_source(module.__name__) if isinstance(loader, InspectLoader) else None
    if not source:
        raise TargetError(f"zluda-runner's own {module.__name__} has no source here to run in the target",
                          hint="reinstall zluda-runner (its .py files are missing)")
    return source


# --------------------------------------------------------------------------- start-up (._pth)


def parse_pth(lines: Sequence[str], pth_dir: str) -> tuple[tuple[str, ...], bool]:
    """``sys.path`` and whether ``site`` runs, from a ``._pth`` file's lines, by CPython's rules
    (Modules/getpath.py): ``#`` starts a comment, blank lines are skipped, the line ``import site``
    enables site, any other ``import`` line is ignored, every other line is a folder relative to the
    ``._pth`` file's own."""
    paths: list[str] = []
    site = False
    for raw in lines:
        line = raw.partition("#")[0].strip()
        if not line:
            continue
        if line == "import site":
            site = True
        elif not line.startswith("import "):
            paths.append(os.path.normpath(os.path.join(pth_dir, line)))
    return tuple(paths), site


def startup_of(data: object) -> PythonStartup | None:
    """The interpreter's start-up facts from what the probe saw (None from an older probe answer)."""
    if not isinstance(data, dict):
        return None
    pth = data.get("pth_file")
    if isinstance(pth, str) and pth:
        sys_path, site = parse_pth([str(x) for x in data.get("pth_lines") or []], os.path.dirname(pth))
        return PythonStartup(pth_file=pth, honours_pythonpath=False, site_enabled=site, sys_path=sys_path,
                             site_packages=tuple(data.get("site_packages") or ()) if site else ())
    site = not data.get("no_site", False)
    return PythonStartup(
        pth_file=None,
        honours_pythonpath=not data.get("ignore_environment", False),
        site_enabled=site,
        sys_path=tuple(str(p) for p in data.get("sys_path") or ()),
        site_packages=tuple(data.get("site_packages") or ()) if site else (),
    )


# --------------------------------------------------------------------------- torch/version.py


def parse_torch_version(text: str, *, where: str = "torch/version.py") -> dict[str, str | None]:
    """Top-level constant assignments of ``torch/version.py`` (parsed, never executed)."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise TargetError(f"{where} cannot be parsed: {exc}",
                          hint="the torch install is damaged; reinstall it") from exc
    found: dict[str, str | None] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if (isinstance(target, ast.Name) and isinstance(value, ast.Constant)
                and (value.value is None or isinstance(value.value, str))):
            found[target.id] = value.value
    return found


def torch_info(torch_dir: Path, version_text: str | None = None) -> TorchInfo:
    if version_text is None:
        vp = torch_dir / "version.py"
        try:
            version_text = vp.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise TargetError(
                f"{torch_dir} has no readable version.py",
                hint="the torch install is damaged or not a torch package; reinstall torch",
            ) from exc
    fields = parse_torch_version(version_text, where=str(torch_dir / "version.py"))
    return TorchInfo(
        version=fields.get("__version__"),
        cuda=fields.get("cuda"),
        hip=fields.get("hip"),
        path=str(torch_dir),
        git_version=fields.get("git_version"),
    )


def check_cuda_build(info: TorchInfo, where: str) -> None:
    """:class:`TargetError` unless this torch is a CUDA build (ZLUDA has nothing to do otherwise)."""
    if info.hip:
        raise TargetError(
            f"torch {info.version} at {where} is a ROCm build (HIP {info.hip}): it runs on AMD GPUs "
            "natively and needs no ZLUDA",
            hint="run it directly; to compare it with a CUDA build under ZLUDA use "
            "{cmd:ab --b-python <rocm python> -- <script>}",
        )
    if not info.cuda:
        raise TargetError(
            f"torch {info.version} at {where} is a CPU-only build: there is nothing for ZLUDA to run",
            hint="install a CUDA build of torch in this interpreter (PyPI's Linux wheels are CUDA builds; "
            "on Windows use https://download.pytorch.org/whl/cu118), or pass {opt:python} for one that "
            "has it",
        )


