"""Each public call given None (or another wrong type) where a command, a launch, a plan or a path is
wanted says which argument and what it must be, before the library is reached: on 2d56757 these failed
deep inside ("'NoneType' object is not iterable" in launch/process.py, "'NoneType' object has no
attribute 'plan'", "expected str, bytes or os.PathLike object")."""

from __future__ import annotations

from typing import Any

import pytest

import zluda_runner as zr

CASES: list[tuple[str, tuple[Any, ...], str]] = [
    ("run", (None,), "command"), ("prepare_launch", (None,), "command"), ("warmup", (42,), "command"),
    ("run_poc", (None,), "argv"), ("start", (None,), "launch"), ("trace_launch", ({"argv": []},), "launch"),
    ("verify_launch", (None,), "launch"), ("verify_plan", ("plan.json",), "plan"),
    ("read_trace", (None,), "path"), ("cached_release", (6,), "version"), ("place", (None,), "torch_lib"),
]


@pytest.mark.parametrize(("name", "args", "argument"), CASES, ids=[c[0] for c in CASES])
def test_a_wrong_argument_is_named_with_what_it_must_be(name: str, args: tuple[Any, ...],
                                                       argument: str) -> None:
    with pytest.raises(TypeError) as info:
        getattr(zr, name)(*args)
    assert isinstance(info.value, zr.ZludaRunnerError)
    assert info.value.kind == "argument-type", info.value
    assert str(info.value).startswith(f"{name}({argument}=...) "), info.value
    assert f"not {type(args[0]).__name__}" in str(info.value)  # and what it was


def test_a_command_of_words_still_reaches_the_library() -> None:
    """The check is on the shape only: a list of words goes on (here to the command-not-found error)."""
    with pytest.raises(zr.CommandNotFoundError):
        zr.prepare_launch(["zluda-runner-no-such-program-anywhere"], zr.Options(record=False))
