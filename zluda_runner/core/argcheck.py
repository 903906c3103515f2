"""One argument check at the API boundary, read from the public functions' own annotations.

:func:`checked` wraps a public function: on its first call the annotations are read (names only a type
checker imports are looked up in the module, then in the package's table of public names; one never
found is not checked, and nothing inside ``Callable[...]`` is resolved: a callback only needs to be
callable), and every call's arguments are held to them before the function runs. A bool is exactly a
bool; an int is no bool; a float is any finite int or float; a ``Sequence[str]`` is a list of words,
never one str; a path (a union holding ``Path``) is a str or ``os.PathLike``, not blank; ``Literal``
values and :class:`Range` bounds (``Seconds``, ``Count``, ...) hold; what is not understood passes.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ParamSpec, TypeVar

from zluda_runner.core.errors import ZludaRunnerError


class ArgumentTypeError(ZludaRunnerError, TypeError):
    """An argument of a public call of the wrong type (named, with what it must be)."""


class ArgumentValueError(ZludaRunnerError, ValueError):
    """An argument of a public call of the right type and a wrong value (out of range, blank)."""


@dataclass(frozen=True)
class Range:
    """Bounds of a number, as ``Annotated[float, Range(gt=0)]``."""

    gt: float | None = None
    ge: float | None = None
    le: float | None = None

    def holds(self, value: float) -> bool:
        return ((self.gt is None or value > self.gt) and (self.ge is None or value >= self.ge)
                and (self.le is None or value <= self.le))

    def __str__(self) -> str:
        bounds = ((">", self.gt), (">=", self.ge), ("<=", self.le))
        return " and ".join(f"{op} {bound:g}" for op, bound in bounds if bound is not None)


Seconds = Annotated[float, Range(gt=0)]
"""A time in seconds: more than 0."""
Count = Annotated[int, Range(ge=1)]
"""How many times: 1 or more."""
MAX_RUNS = 1000
Runs = Annotated[int, Range(ge=1, le=MAX_RUNS)]
"""Runs of a workload (ab, poc): every run's record (output tails, GPU trace) stays in memory."""
NotNegative = Annotated[float, Range(ge=0)]
"""A tolerance or a ratio: 0 or more."""

P = ParamSpec("P")
R = TypeVar("R")
# value -> None when it fits, else "type" or "value" (which error)
_Test = Callable[[object], str | None]


def checked(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` with its arguments checked against its annotations before it runs."""
    tests: dict[str, tuple[_Test, str]] | None = None
    signature: Any = None

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        import inspect

        nonlocal tests, signature
        if tests is None:
            tests, signature = _tests_of(inspect.unwrap(function)), inspect.signature(function)
        try:
            given = signature.bind(*args, **kwargs).arguments
        except TypeError:  # a missing or unknown argument: Python's own error
            return function(*args, **kwargs)
        for name, value in given.items():
            if name in tests and (fault := tests[name][0](value)) is not None:
                raise _refusal(function.__name__, name, fault, tests[name][1], value)
        return function(*args, **kwargs)

    call.__dict__["checked"] = True
    return call


def check_fields(record: object) -> None:
    """Each field of the frozen dataclass ``record`` held to its annotation, as :func:`checked` holds a
    call's arguments (``Options(force=...) must be True or False``), for its ``__post_init__``. As on the
    command line, a blank text or path of an optional field is unset (None); a path field given text
    keeps a ``Path``, a text field given a path keeps its text."""
    import typing
    from pathlib import Path

    kind = type(record)
    for name, hint, test in _field_tests(kind.__init__):  # the dataclass's own __init__: every field
        value, members = getattr(record, name), typing.get_args(hint) or (hint,)
        made = Path if Path in members else str if str in members else None
        if made and isinstance(value, str | os.PathLike) and isinstance(text := os.fspath(value), str):
            value = None if not text.strip() and type(None) in members else made(text)
            object.__setattr__(record, name, value)  # frozen: set once, while it is made
        if test is not None and (fault := test[0](value)) is not None:
            raise _refusal(kind.__name__, name, fault, test[1].replace(" (not blank)", ""), value)


@functools.cache
def _field_tests(init: Callable[..., object]) -> list[tuple[str, object, tuple[_Test, str] | None]]:
    return [(name, hint, _test(hint)) for name, hint in _hints(init).items()]


def _refusal(owner: str, name: str, fault: str, what: str, value: object) -> ZludaRunnerError:
    error = ArgumentTypeError if fault == "type" else ArgumentValueError
    return error(f"{owner}({name}=...) must be {what}, not {shown(value)}", f"see help(zluda_runner.{owner})")


def shown(value: object) -> str:
    """A value as an error names it: its type and (the start of) its repr."""
    return f"{type(value).__name__} {value!r}"[:80]


def _tests_of(function: Callable[..., object]) -> dict[str, tuple[_Test, str]]:
    return {name: test for name, hint in _hints(function).items() if (test := _test(hint)) is not None}


def _hints(function: Callable[..., object]) -> dict[str, object]:
    """``function``'s parameters' annotations, read (one this check cannot read is left out)."""
    names = _TypeCheckingNames(function.__globals__)
    hints = {}
    for name, text in function.__annotations__.items():
        try:
            if name != "return":
                hints[name] = eval(_without_callable_args(text), function.__globals__, names)  # noqa: S307
        except Exception:  # noqa: S112 - an annotation this check cannot read is not checked
            continue
    return hints


def _without_callable_args(text: str) -> str:
    """``Callable[[A, B], C]`` as plain ``Callable``: its argument types are never looked up."""
    while (found := re.search(r"\bCallable\[", text)) is not None:
        depth, end = 0, found.end() - 1
        for end in range(found.end() - 1, len(text)):
            depth += {"[": 1, "]": -1}.get(text[end], 0)
            if depth == 0:
                break
        text = text[:found.end() - 1] + text[end + 1:]
    return text


def type_checking_names(module_globals: dict[str, Any]) -> dict[str, object]:
    """A mapping that finds the names a module imports only for a type checker, importing them on use
    (for ``eval`` of an annotation, as its locals: the module's own names and the builtins come next)."""
    return _TypeCheckingNames(module_globals)


class _TypeCheckingNames(dict[str, object]):
    """The names a module imports only for a type checker (``from M import A`` under its ``if
    TYPE_CHECKING:``), imported on use from where it says (a KeyError sends Python on to the builtins)."""

    def __init__(self, module_globals: dict[str, Any]) -> None:
        super().__init__()
        self.module_globals = module_globals
        file = module_globals.get("__file__")
        self.module_file = file if isinstance(file, str) else ""

    def __missing__(self, name: str) -> object:
        import builtins
        import importlib

        if name in self.module_globals or name in builtins.__dict__:  # Python looks there next: the
            raise KeyError(name)  # module's source is read only for a name it imports for a type checker
        module, attribute = _type_checking_imports(self.module_file)[name]
        return getattr(importlib.import_module(module), attribute)


@functools.cache
def _type_checking_imports(path: str) -> dict[str, tuple[str, str]]:
    """``name -> (module, attribute)`` of the imports under the ``if TYPE_CHECKING:`` of the file."""
    import ast

    try:
        with open(path, "rb") as source:
            tree = ast.parse(source.read())
    except (OSError, SyntaxError, ValueError):  # no source (a frozen module): its names are not checked
        return {}
    blocks = [b for b in ast.walk(tree) if isinstance(b, ast.If) and "TYPE_CHECKING" in ast.unparse(b.test)]
    return {alias.asname or alias.name: (node.module, alias.name)
            for block in blocks for node in block.body
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            for alias in node.names}


def _test(hint: object) -> tuple[_Test, str] | None:
    """How a value is held to ``hint``, and what it must be; None: not checked."""
    import collections.abc
    import types
    import typing
    from pathlib import Path

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        base = _test(args[0])
        ranges = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Range)]
        if base is None or not ranges:
            return base
        (inner, what), bound = base, ranges[0]

        def ranged(value: object) -> str | None:
            fault = inner(value)
            return fault if fault is not None else None if bound.holds(value) else "value"  # type: ignore[arg-type]
        return ranged, f"{what} {bound}"
    if origin in (typing.Union, types.UnionType):
        optional = type(None) in args
        members = [a for a in args if a is not type(None)]
        if Path in members:
            members = [a for a in members if a not in (Path, str)]
            members.insert(0, "path")
        tests = [_path_test() if m == "path" else _test(m) for m in members]
        if any(t is None for t in tests):
            return None
        known = [t for t in tests if t is not None]

        def one_of(value: object) -> str | None:
            if value is None and optional:
                return None
            faults = [test(value) for test, _ in known]
            return None if None in faults else "value" if "value" in faults else "type"
        return one_of, " or ".join(w for _, w in known) + (" (or None)" if optional else "")
    if hint is bool:
        return (lambda v: None if isinstance(v, bool) else "type"), "True or False"
    if hint is int:
        return (lambda v: None if isinstance(v, int) and not isinstance(v, bool) else "type"), "an int"
    if hint is float:
        return _number, "a number"
    if hint is str:
        return (lambda v: None if isinstance(v, str) else "type"), "a str"
    if origin is typing.Literal:
        return (lambda v: None if v in args else "value"), "one of " + ", ".join(map(repr, args))
    if origin is collections.abc.Sequence and args:  # its shape; the words of a command are the library's
        item = None if args[0] is str else _test(args[0])

        def each(value: object) -> str | None:
            if isinstance(value, str | bytes) or not isinstance(value, collections.abc.Sequence):
                return "type"
            return None if item is None else next((f for f in map(item[0], value) if f is not None), None)
        return each, "a list of words (str), not one str" if item is None else f"a list, each {item[1]}"
    if hint is collections.abc.Callable or origin is collections.abc.Callable:
        return (lambda v: None if callable(v) else "type"), "callable"
    if isinstance(hint, type) and hint is not object and not getattr(hint, "_is_protocol", False):
        shown = (f"zluda_runner.{hint.__name__}" if hint.__module__.startswith("zluda_runner")
                 else hint.__qualname__)
        return (lambda v: None if isinstance(v, hint) else "type"), f"a {shown}"
    return None


def _number(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "type"
    return None if math.isfinite(value) else "value"


def _path_test() -> tuple[_Test, str]:
    def path(value: object) -> str | None:
        if not isinstance(value, str | os.PathLike) or isinstance(os.fspath(value), bytes):
            return "type"
        return None if os.fspath(value).strip() else "value"
    return path, "a str or pathlib.Path (not blank)"
