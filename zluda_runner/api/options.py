"""The one options record of the public API, and the one place it becomes the library's settings.

Errors and warnings reach a Python caller worded for it: the library writes them neutral
(:mod:`zluda_runner.core.wording`), a Python caller (the default) reads :class:`Options` fields and API
functions, the ``zluda-run`` front end (:func:`worded_for` ``("command line")``) its flags and commands.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from zluda_runner.core.argcheck import shown
from zluda_runner.core.settings import Settings
from zluda_runner.core.wording import render
from zluda_runner.core.wording import worded_for as worded_for  # re-exported: the front ends set it

if TYPE_CHECKING:
    from zluda_runner.plan.model import ShimPlan


@dataclass(frozen=True)
class Options:
    """Everything a caller may set, once, for every call of the API (all keywords, all optional).

    Attributes:
        cache_dir: where releases, plans and the results store live (default: ``$ZLUDA_RUNNER_CACHE``,
            else the platform's user cache folder).
        zluda_dir: a ZLUDA folder to use as is (one you unpacked or built) instead of a release from
            the manifest.
        release: the manifest release to use (id, version or tag) instead of the one selected.
        manifest: a release manifest file to read instead of the packaged (or updated) one.
        python: the interpreter whose torch is the target (default: the one the command runs,
            else this one).
        trust_on_first_use: accept, and record, a release whose SHA-256 the manifest does not know.
        archive: a hand-downloaded release archive to install instead of downloading it.
        force: go on when the plan predicts the launch will fail (a fatal verdict).
        results_db: the results store: a SQLite file or a ``postgresql://`` URL (default: ``results.db``
            in the cache folder).
        record: keep probe and doctor results in the results store.
        defaults: apply the settings a ZLUDA launch needs (fused attention off where the release cannot
            run it, cuDNN off without a stand-in, ...), each listed with its reason in the plan.
        monitor: the command line's ``--monitor`` (sample the GPU while the workload runs); from
            Python, pass ``on_telemetry=`` to :func:`run`, :func:`start`, :func:`verify_launch` or
            :func:`trace_launch` to hear the GPU trace.
    """

    cache_dir: Path | None = None
    zluda_dir: Path | None = None
    release: str | None = None
    manifest: Path | None = None
    python: str | None = None
    trust_on_first_use: bool = False
    archive: Path | None = None
    force: bool = False
    results_db: str | None = None
    record: bool = True
    defaults: bool = True
    monitor: bool = False

    def __post_init__(self) -> None:
        """Each field checked (TypeError naming it, as for an unknown keyword), before any call reads it: a
        path as ``str`` or ``Path`` (kept as a ``Path``; ``results_db`` and ``python`` as text), a switch as
        ``True``/``False`` (``record="no"`` would record); an empty path is unset, as on the command line
        (``cache_dir=""`` put the cache in the current folder)."""
        for field in fields(self):
            value = getattr(self, field.name)
            if value is None and field.name not in _SWITCHES:
                continue
            if field.name in _SWITCHES:
                if not isinstance(value, bool):
                    raise TypeError(f"Options({field.name}=...) must be True or False, not {shown(value)}")
            elif field.name == "release":
                if not isinstance(value, str):
                    raise TypeError(f"Options(release=...) must be a str (an id, version or tag), "
                                    f"not {shown(value)}")
            elif not isinstance(value, str | os.PathLike) or isinstance(os.fspath(value), bytes):
                raise TypeError(f"Options({field.name}=...) must be a str or pathlib.Path, "
                                f"not {shown(value)}")
            else:  # "" is no path: unset, as on the command line (Path("") would be the current folder)
                text = os.fspath(value)
                kept = text if field.name in _TEXTS else Path(text)
                object.__setattr__(self, field.name, kept if text.strip() else None)


_SWITCHES = frozenset({"trust_on_first_use", "force", "record", "defaults", "monitor"})
_TEXTS = frozenset({"results_db", "python"})  # a path given as a Path is kept as text for these


def to_settings(options: Options | None, *, verify_load: bool = False,
                trace_out: Path | None = None) -> Settings:
    """The library's settings for ``options`` (the only conversion: the CLI builds :class:`Options`
    too). ``verify_load`` and ``trace_out`` are what one call asks for, not options of every call.
    (A public call's ``options`` is checked by its annotation: :mod:`zluda_runner.core.argcheck`.)"""
    given = {f.name: getattr(options, f.name) for f in fields(Options)} if options is not None else {}
    if given.get("cache_dir") is None:  # unset: the settings' default (the environment, the user cache)
        given.pop("cache_dir", None)
    return Settings(**given, verify_load=verify_load, trace_out=trace_out)


def keep(kind: str, report: object, settings: Settings, command: Sequence[str] | None = None, *,
         on_warning: Callable[[str], None] | None = None, plan: ShimPlan | None = None,
         argv: Sequence[str] = (), planned: bool = True) -> None:
    """Record ``report`` in the results store unless ``Options(record=False)``; a store problem goes to
    ``on_warning`` (worded for the audience), never raises. ``command``: the caller's own (default: what
    was asked, :func:`recorded`). The release and torch recorded, for every kind, are the run's plan's
    (``plan``; else the plan for ``argv``, ``planned=False``: a run without one):
    :func:`zluda_runner.conduct.refs.run_refs`."""
    if not settings.record:
        return
    from zluda_runner.conduct.refs import run_refs
    from zluda_runner.host.quick import quick_facts
    from zluda_runner.results.recording import record_report

    release, target = run_refs(settings, argv, plan=plan, planned=planned)
    warning = record_report(kind, report, settings=settings, release=release, target=target,
                            command=None if command is None else [str(w) for w in command],
                            host=quick_facts().fingerprint()).warning
    if warning and on_warning is not None:
        on_warning(worded(warning))


P = ParamSpec("P")
R = TypeVar("R")


def recorded(function: Callable[P, R]) -> Callable[P, R]:
    """An API function whose run is recorded: what it was asked (its name and the arguments given, an
    :class:`Options` by the fields set) is the run's command, unless a front end said already (the
    command line's words: :func:`zluda_runner.results.recording.asked`)."""

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
    from zluda_runner.results.recording import asked

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
