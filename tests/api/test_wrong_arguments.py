"""Each public call given None (or another wrong type) where a command, a launch, a plan or a path is
wanted says which argument and what it must be, before the library is reached: on 2d56757 these failed
deep inside ("'NoneType' object is not iterable" in launch/process.py, "'NoneType' object has no
attribute 'plan'", "expected str, bytes or os.PathLike object")."""

from __future__ import annotations

from typing import Any

import pytest

import zluda_runner as zr

CASES: list[tuple[str, tuple[Any, ...], str]] = [
    ("run", (None,), "the command must be a list of words"),
    ("prepare_launch", (None,), "the command must be a list of words"),
    ("warmup", (42,), "the command must be a list of words"),
    ("run_poc", (None,), "the command must be a list of words"),
    ("start", (None,), "start(launch=...) must be the Launch that prepare_launch() gave"),
    ("trace_launch", ({"argv": []},), "trace_launch(launch=...) must be the Launch"),
    ("verify_launch", (None,), "verify_launch(launch=...) must be the Launch"),
    ("verify_plan", ("plan.json",), "verify_plan(plan=...) must be the ShimPlan that plan_command() gave"),
    ("read_trace", (None,), "read_trace(path=...) must be a str or pathlib.Path"),
    ("cached_release", (6,), "cached_release(version=...) must be a str"),
    ("place", (None,), "place(torch_lib=...) must be the torch/lib folder"),
]


@pytest.mark.parametrize(("name", "args", "said"), CASES, ids=[c[0] for c in CASES])
def test_a_wrong_argument_is_named_with_what_it_must_be(name: str, args: tuple[Any, ...], said: str) -> None:
    with pytest.raises(TypeError) as info:
        getattr(zr, name)(*args)
    assert said in str(info.value), info.value
    assert f"not {type(args[0]).__name__}" in str(info.value)  # and what it was


def test_a_command_of_words_still_reaches_the_library() -> None:
    """The check is on the shape only: a list of words goes on (here to the command-not-found error)."""
    with pytest.raises(zr.CommandNotFoundError):
        zr.prepare_launch(["zluda-runner-no-such-program-anywhere"], zr.Options(record=False))
