"""Benchmarks and scripts stay in step with the package: each one imports (its main is not run)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted([*REPO.glob("benchmarks/*.py"), *REPO.glob("examples/*.py"),
                  REPO / "tests" / "newcomer_readme.py"])


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(REPO)))
def test_script_imports(path: Path) -> None:
    spec = importlib.util.spec_from_file_location(f"_script_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # top level only: __name__ is not "__main__"
    assert hasattr(module, "main"), f"{path.name} has no main()"
