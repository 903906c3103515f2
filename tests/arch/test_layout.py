"""The package reads as the pipeline: stages import only stages below them.

Ranks follow the data flow of shared/DESIGN.md: a lower stage never imports a higher one, and
two different packages of the same rank do not import each other.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "zluda_runner"

RANKS = {
    "core": 0,
    "data": 0,
    "ab": 0,  # the in-workload recording API: standard library only
    "binfmt": 1,
    "loader": 2,
    "release": 3,
    "inspection": 4,
    "host": 5,
    "results": 6,
    "plan": 6,
    "telemetry": 6,  # GPU telemetry: imports core and host
    "launch": 7,
    "conduct": 7.5,  # the conductor: one run's context, release resolution and plan, above launch
    "probe": 8,
    "trace": 8,
    "report": 12,
    "abtest": 10,
    "doctor": 11,
    "poc": 11,  # the proof-of-concept verdict: abtest, launch, telemetry, results below it
    "finder": 11.5,  # the search for a combination that works: judged by poc, locked (zluda.lock)
    "devtools": 12,
    "api": 12,  # the public API launchers embed: calls the stages, is called by nothing in the package
    "commands": 13,
    "cli": 14,
    "__main__": 15,
    "__init__": 0,
}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1] if len(parts) > 2 else parts
        out[".".join(parts)] = path
    return out


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] == "zluda_runner"}


def test_every_stage_has_a_rank() -> None:
    stages = {_stage(m) for m in _modules()}
    assert stages <= set(RANKS), f"stages without a rank: {sorted(stages - set(RANKS))}"


def test_no_import_runs_upward() -> None:
    upward = []
    for module, path in _modules().items():
        own = _stage(module)
        if own == "__init__":  # the front door: see test_the_package_init_imports_stages_only_lazily
            continue
        for imported in _imports(path):
            other = _stage(imported)
            if other == own or other == "__init__":
                continue
            if RANKS[other] >= RANKS[own]:
                upward.append(f"{module} ({own}) imports {imported} ({other})")
    assert not upward, "imports that run upward or sideways:\n" + "\n".join(sorted(upward))


def test_the_package_init_imports_stages_only_lazily() -> None:
    """zluda_runner/__init__.py re-exports the API by name, imported on first use (its ``__getattr__``);
    its imports of the package are for the type checker only (``if TYPE_CHECKING:``), and importing it
    stays cheap (tests/api/test_import_cost.py)."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    checking = [n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    for_types = {id(node) for block in checking for node in ast.walk(block)}
    eager = [node.lineno for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom | ast.Import) and id(node) not in for_types
             and any(name.split(".")[0] == "zluda_runner"
                     for name in ([node.module or ""] if isinstance(node, ast.ImportFrom)
                                  else [a.name for a in node.names]))]
    assert not eager, f"zluda_runner/__init__.py imports the package eagerly at lines {eager}"


def test_no_module_imports_the_package_root() -> None:
    """``__version__`` and ``JSON_SCHEMA_VERSION`` live in zluda_runner/core/version.py: a stage that took
    them from the root (10 did) ran an import back up to the front door, which re-exports every stage."""
    rooted = sorted(f"{module}: {node.lineno}" for module, path in _modules().items()
                    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if (isinstance(node, ast.ImportFrom) and node.module == "zluda_runner" and not node.level)
                    or (isinstance(node, ast.Import) and any(a.name == "zluda_runner" for a in node.names)))
    assert not rooted, rooted


def test_no_relative_imports() -> None:
    """Absolute imports only, so the layering check above sees every edge."""
    relative = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                relative.append(f"{module}:{node.lineno}")
    assert not relative, relative


def _import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (every import, at module level, in a function or for
    the type checker): ``from a.b import c`` names the module ``a.b.c`` where there is one, else ``a.b``."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = {f"{node.module}.{a.name}" for a in node.names}
                names.update({s for s in subs if s in modules} or {node.module})
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        graph[module] = {n for n in names if n in modules and n != module}
    return graph


def test_no_import_circle() -> None:
    """No two modules import each other, directly or round a loop (a lazy import or one under
    ``TYPE_CHECKING`` counts too: it is still a loop a reader has to walk). The package root is
    left out: it re-exports the API by name and imports nothing eagerly."""
    graph = {m: t for m, t in _import_graph().items() if m != "zluda_runner.__init__"}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_the_circle_check_finds_a_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is not vacuous: two modules that import each other are one circle."""
    pkg = tmp_path / "zluda_runner"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("from zluda_runner.core.b import x\n")
    (pkg / "core" / "b.py").write_text("def f():\n    from zluda_runner.core import a\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    with pytest.raises(AssertionError, match=r"zluda_runner\.core\.a <-> zluda_runner\.core\.b"):
        test_no_import_circle()


PROCESS_STARTERS = {"subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput",
                                   "getstatusoutput"},
                    "os": {"execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp", "execlpe",
                           "posix_spawn", "posix_spawnp", "spawnv", "spawnve", "spawnl", "system", "popen",
                           "startfile", "fork", "forkpty"}}
CHILD_SEAM = {"zluda_runner.core.child", "zluda_runner.core.proctree", "zluda_runner.core.winproc",
              "zluda_runner.core.become"}  # become: the one exec, small, for a plain launch


def _process_starts(tree: ast.AST) -> list[int]:
    """The lines that call a process-starting function (``subprocess.run(...)``, ``os.execve(...)``):
    a call, not a mention (``subprocess.Popen[bytes]`` as a type is none)."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.attr in PROCESS_STARTERS.get(node.func.value.id, ())]


def test_processes_start_only_in_the_child_seam() -> None:
    """Every child starts through core/ (child, proctree, winproc: one signal policy, the whole tree
    ended with zluda-run; become: the one exec); no other module starts a process of its own."""
    outside = [f"{module}:{line}" for module, path in _modules().items() if module not in CHILD_SEAM
               for line in _process_starts(ast.parse(path.read_text(encoding="utf-8")))]
    assert not outside, "processes started outside the child seam: " + ", ".join(outside)
    # (core/child runs its children through proctree's start and become's exec)
    assert all(_process_starts(ast.parse(_modules()[m].read_text(encoding="utf-8"))) for m in CHILD_SEAM - {
        "zluda_runner.core.winproc", "zluda_runner.core.child"}), "the seam itself starts the processes"
    assert _process_starts(ast.parse("import subprocess\nsubprocess.run(['x'])\n")) == [2]
