"""The public API's options (:class:`Options`, declared with the library's settings in
:mod:`zluda_runner.core.settings`), the one place they become the settings, and the caller's wording.

Errors and warnings reach a Python caller worded for it: the library writes them neutral
(:mod:`zluda_runner.core.wording`), a Python caller (the default) reads :class:`Options` fields and API
functions, the ``zluda-run`` front end (:func:`worded_for` ``("command line")``) its flags and commands.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from zluda_runner.core.settings import Options as Options  # the public name (zluda_runner.Options)
from zluda_runner.core.settings import Settings
from zluda_runner.core.wording import render
from zluda_runner.core.wording import worded_for as worded_for  # re-exported: the front ends set it

if TYPE_CHECKING:
    from zluda_runner.plan.model import RecordRefs, ShimPlan


def to_settings(options: Options | None, *, verify_load: bool = False,
                trace_out: Path | None = None) -> Settings:
    """The library's settings for ``options``: its fields as they are (one record: :class:`Settings` is
    :class:`Options` with what one call asks for, ``verify_load`` and ``trace_out``)."""
    given = {f.name: getattr(options, f.name) for f in fields(Options)} if options is not None else {}
    return Settings(**given, verify_load=verify_load, trace_out=trace_out)


def keep(kind: str, report: object, settings: Settings, command: Sequence[str] | None = None, *,
         on_warning: Callable[[str], None] | None = None, refs: RecordRefs | None = None,
         plan: ShimPlan | None = None, argv: Sequence[str] = (), planned: bool = True) -> None:
    """Record ``report`` in the results store unless ``Options(record=False)``; a store problem goes to
    ``on_warning`` (worded for the audience), never raises. ``command``: the caller's own (default: what
    was asked, :func:`recorded`). The release, torch and host recorded, for every kind, are those of the
    run's own context (``refs``: :func:`zluda_runner.conduct.refs.context_refs`); else ``plan``'s; else
    those of the plan for ``argv`` (``planned=False``: a run without one):
    :func:`zluda_runner.conduct.refs.run_refs`."""
    if not settings.record:
        return
    from zluda_runner.results.recording import record_report

    if refs is None and plan is not None:
        from zluda_runner.plan.defaults_facts import read_host
        from zluda_runner.plan.model import RecordRefs

        refs = RecordRefs(*plan.refs(), host=read_host(os.environ).recorded())
    elif refs is None:
        from zluda_runner.conduct.refs import run_refs

        refs = run_refs(settings, argv, planned=planned)
    warning = record_report(kind, report, settings=settings, release=refs.release, target=refs.target,
                            command=None if command is None else [str(w) for w in command],
                            host=refs.host).warning
    if warning and on_warning is not None:
        on_warning(worded(warning))


P = ParamSpec("P")
R = TypeVar("R")


def recorded(function: Callable[P, R]) -> Callable[P, R]:
    """An API function whose run is recorded: what it was asked (its name and the arguments given, an
    :class:`Options` by the fields set) is the run's command, unless a front end said already (the
    command line's words: :func:`zluda_runner.results.asked.asked`)."""

    @functools.wraps(function)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        import inspect

        try:
            given = inspect.signature(function).bind(*args, **kwargs).arguments
        except TypeError:  # the call's own error, as Python words it
            return function(*args, **kwargs)
        said = (word for name, value in given.items() for word in _said(name, value))
        with asked_for([f"zluda_runner.{function.__name__}", *said]):
            return function(*args, **kwargs)

    return call


def asked_for(words: Sequence[str]) -> contextlib.AbstractContextManager[None]:
    """A front end's words for what the user asked: the command of every run recorded meanwhile."""
    from zluda_runner.results.asked import asked

    return asked(words)


def _said(name: str, value: object) -> list[str]:
    """An argument as the words a run records (a callback is not recorded; a launch or plan by its argv)."""
    if isinstance(value, Options):
        return [f"options.{f.name}={_shown_word(getattr(value, f.name))}" for f in fields(value)
                if getattr(value, f.name) != f.default]
    if value is None or callable(value):
        return []
    return [f"{name}={_shown_word(value)}"]


def _shown_word(value: object) -> str:
    import shlex

    words = getattr(value, "argv", value)  # a Launch, a ShimPlan: the command it runs
    if isinstance(words, tuple | list):
        return shlex.join(str(w) for w in words)
    return str(words) if isinstance(words, str | os.PathLike) else repr(words)[:200]


# --------------------------------------------------------------------------- wording for the caller


def worded(text: str) -> str:
    """``text`` (a hint, a warning) worded for the audience of the current call (:func:`worded_for`)."""
    return render(text)


def command_words(command: Sequence[object]) -> list[str]:
    """A caller's command as the words the system is given (a ``pathlib.Path`` as text); LaunchError for
    one string (``"python infer.py"`` was taken letter by letter: "command not found: p") or a word that
    is ``None``, bytes or holds a NUL; TypeError for what is no list at all (``None``, a number), before
    anything is planned."""
    from zluda_runner.launch.process import command_words as words

    with caller_errors():
        return words(command)


def warn_with(on_warning: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """``on_warning`` hearing each warning worded for the audience (None stays None)."""
    if on_warning is None:
        return None
    hear = on_warning
    return lambda text: hear(worded(text))


@contextlib.contextmanager
def caller_errors() -> Iterator[None]:
    """Where a call of the API meets the library: a :class:`ZludaRunnerError` passes through as it is
    (its ``hint`` and ``message`` are worded when read, for the audience of :func:`worded_for`)."""
    yield
