"""The package reads as the pipeline: stages import only stages below them.

Ranks follow the data flow of shared/DESIGN.md: a lower stage never imports a higher one, and
two different packages of the same rank do not import each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

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
