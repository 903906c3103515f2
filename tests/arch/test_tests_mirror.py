"""tests/ mirrors the package: each test folder is named after the zluda_runner/ folder it tests (issue 21).

A reader looking for the tests of ``zluda_runner/release/`` opens ``tests/release/``, and the tests of a
stage move with it. The top-level modules have no folder of their own: ``cli.py`` is the entry over
``commands/`` (its tests, the whole command line, are tests/commands), ``ab.py`` is recorded by the A/B
runs of ``abtest/`` (tests/abtest).

Not stages, so not mirrored: ``fixtures`` (inputs: C sources, maps, logs), ``windows`` (the Wine
platform: every stage again under Windows CPython) and ``arch`` (the architecture as a whole).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
PACKAGE = REPO / "zluda_runner"

NOT_STAGES = {"fixtures", "windows", "arch"}


def _test_folders() -> set[str]:
    """The folders under tests/ that hold Python files (a folder left with only __pycache__ is gone)."""
    return {p.name for p in TESTS.iterdir()
            if p.is_dir() and p.name != "__pycache__" and any(p.glob("*.py"))}


def _package_folders() -> set[str]:
    return {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}


def test_every_test_folder_names_a_package_folder() -> None:
    stray = sorted(_test_folders() - NOT_STAGES - _package_folders())
    assert not stray, (f"tests/{stray[0]} names no folder of zluda_runner/ (stray: {stray}); "
                       f"put its files in the tests/ folder of the package folder they test")


def test_the_exceptions_are_real_folders() -> None:
    """The exempt folders exist (a renamed one would silently widen the rule) and are not stages."""
    assert _test_folders() | {"fixtures"} >= NOT_STAGES
    assert (TESTS / "fixtures").is_dir()
    assert not NOT_STAGES & _package_folders()


def test_the_rule_sees_the_folders() -> None:
    """The listing reads the real tree: the big stages are found on both sides."""
    both = _test_folders() & _package_folders()
    assert {"core", "release", "launch", "plan", "commands"} <= both
