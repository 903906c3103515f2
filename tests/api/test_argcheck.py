"""Every public function's arguments are held to its annotations before anything runs
(zluda_runner.core.argcheck), found 2026-12-02: ``warmup(clear_caches="false")`` deleted ZLUDA's compile
cache, 11 boolean keywords took any object by its truth, ``run_ab("x.py")`` ran ``x . p y``,
``cache_path(version=42)`` raised AttributeError, ``run(timeout="5")`` "unsupported operand" and
``run(on_telemetry=42)`` "'int' object is not callable" after the workload had run."""

from __future__ import annotations

import inspect
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

import zluda_runner as zr
from zluda_runner.core import argcheck

FUNCTIONS = sorted(n for n in zr.__all__ if inspect.isfunction(getattr(zr, n)))
UNCHECKED = {("record_result", "report")}  # a Protocol: what it must do is checked by the recording

# a wrong value for a parameter: the first of these its annotation refuses ("false" first: a bool, a
# command, a number and a callback refuse it; a str and a path take it and refuse 42)
WRONG: tuple[object, ...] = ("false", 42, object(), 1.5, True, ["x", 1], math.nan)


def _fine(test: Any) -> object:
    """A value ``test`` takes (for the required parameters before the one being tested)."""
    pool = [["python", "x.py"], "x", 1, 1.0, True, Path("p"), zr.Options(), print,
            object.__new__(zr.Launch), object.__new__(zr.ShimPlan)]
    return next(v for v in pool if test(v) is None)


def _cases() -> list[tuple[str, str, object]]:
    cases = []
    for name in FUNCTIONS:
        tests = argcheck._tests_of(inspect.unwrap(getattr(zr, name)))
        for parameter in inspect.signature(getattr(zr, name)).parameters:
            if (name, parameter) in UNCHECKED:
                continue
            assert parameter in tests, f"{name}({parameter}=...) is not checked: annotate it"
            test, _ = tests[parameter]
            cases.append((name, parameter, next(v for v in WRONG if test(v) is not None)))
    return cases


@pytest.fixture()
def nothing_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A current folder and cache that must stay empty, and no child process may start."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ZLUDA_RUNNER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a child process was started: {args}")

    monkeypatch.setattr(subprocess.Popen, "__init__", refused)
    return tmp_path


def test_every_public_function_is_checked() -> None:
    assert FUNCTIONS and all(getattr(getattr(zr, n), "checked", False) for n in FUNCTIONS)


def _case_id(value: object) -> str:
    """A stable id: a bare object() by its type, not its address (xdist workers must agree)."""
    return "object" if type(value) is object else str(value)[:30]


@pytest.mark.parametrize(("name", "parameter", "wrong"), _cases(), ids=_case_id)
def test_each_parameter_given_a_wrong_type_is_refused_by_name(nothing_runs: Path, name: str,
                                                              parameter: str, wrong: object) -> None:
    function = getattr(zr, name)
    tests = argcheck._tests_of(inspect.unwrap(function))
    given: dict[str, object] = {}
    for p in inspect.signature(function).parameters.values():
        if p.name == parameter:
            given[p.name] = wrong
        elif p.default is inspect.Parameter.empty:  # the others it needs: any value that fits
            given[p.name] = _fine(tests[p.name][0]) if p.name in tests else object()
    with pytest.raises((TypeError, ValueError)) as caught:
        function(**given)
    assert isinstance(caught.value, zr.ZludaRunnerError)
    assert caught.value.kind in ("argument-type", "argument-value"), caught.value
    assert str(caught.value).startswith(f"{name}({parameter}=...) "), caught.value  # what and where
    assert list(nothing_runs.iterdir()) == []  # nothing written


@pytest.mark.parametrize(("call", "parameter", "error"), [
    (lambda: zr.warmup(["python", "x.py"], clear_caches="false"), "clear_caches", TypeError),
    (lambda: zr.run_ab("x.py"), "script", TypeError),
    (lambda: zr.cache_path(version=42), "version", TypeError),
    (lambda: zr.run(["python", "x.py"], timeout="5"), "timeout", TypeError),
    (lambda: zr.run(["python", "x.py"], timeout=0), "timeout", ValueError),
    (lambda: zr.run(["python", "x.py"], timeout=math.inf), "timeout", ValueError),
    (lambda: zr.run(["python", "x.py"], on_telemetry=42), "on_telemetry", TypeError),
    (lambda: zr.warmup(["python", "x.py"], heartbeat=-1), "heartbeat", ValueError),
    (lambda: zr.read_trace(" "), "path", ValueError),
    (lambda: zr.list_results(limit=True), "limit", TypeError),
])
def test_the_measured_defects_are_refused_before_anything_runs(nothing_runs: Path, call: Any, parameter: str,
                                                               error: type[Exception]) -> None:
    with pytest.raises(error, match=rf"\({parameter}=\.\.\.\) must be "):
        call()
    assert list(nothing_runs.iterdir()) == []


def test_what_fits_goes_on_and_none_is_taken_where_optional(nothing_runs: Path) -> None:
    """The check refuses only what the annotation refuses: a Path word, a date, None for an option."""
    test, _ = argcheck._tests_of(inspect.unwrap(zr.run))["command"]
    assert test([Path("python"), "x.py"]) is None and test(("python",)) is None
    since, _ = argcheck._tests_of(inspect.unwrap(zr.list_results))["since"]
    import datetime

    assert since(datetime.date(2026, 1, 1)) is None and since(None) is None and since("2026-01-01") is None
    assert argcheck._without_callable_args("Callable[[GpuTrace | X], None] | None") == "Callable | None"
