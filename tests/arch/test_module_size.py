"""No module of the package over 600 lines (the house rule: small modules whose folder tells their stage).
A module that grows past it is split by what it answers, not trimmed by squeezing lines."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "zluda_runner"
LIMIT = 600


def module_sizes(root: Path = PACKAGE) -> dict[str, int]:
    """Each ``.py`` file under ``root`` -> its number of lines."""
    return {p.relative_to(root).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
            for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}


def test_no_module_over_the_limit() -> None:
    over = {name: n for name, n in module_sizes().items() if n > LIMIT}
    assert not over, f"modules over {LIMIT} lines (split each by what it answers): {over}"


def test_the_count_sees_a_long_module(tmp_path: Path) -> None:
    """The check can fail: a module of LIMIT + 1 lines is counted as such."""
    (tmp_path / "long.py").write_text("x = 1\n" * (LIMIT + 1), encoding="utf-8")
    (tmp_path / "short.py").write_text("x = 1\n", encoding="utf-8")
    assert module_sizes(tmp_path) == {"long.py": LIMIT + 1, "short.py": 1}
