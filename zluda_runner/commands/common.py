"""Small helpers shared by the command modules, and what the user asked (:class:`Invocation`)."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import click

from zluda_runner.api.options import Options, asked_for
from zluda_runner.commands.global_options import argument_words
from zluda_runner.commands.workload import warn as warn  # re-exported: the commands' on_warning
from zluda_runner.core.argcheck import MAX_RUNS, NotNegative, Range, Seconds
from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.serial import to_plain
from zluda_runner.core.version import JSON_SCHEMA_VERSION

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Invocation:
    """What the user asked, as the command line parsed it: the one invocation record.

    ``words``: the whole command line (``zluda-run``, the global options, the command and its options,
    the workload's words, each option as the parser took it, from a word or its environment variable),
    what every run recorded meanwhile stores (credentials masked when recorded). ``options``: the API's
    :class:`Options` (the one options record) the global options make; ``json``, ``trace``,
    ``trace_out``, ``verify_load``: what only the command line has (``--json`` output; which API call a
    launch is)."""

    options: Options = field(default_factory=Options)
    json: bool = False
    trace: bool = False
    trace_out: Path | None = None
    verify_load: bool = False
    words: tuple[str, ...] = ()


def pass_invocation(command: Callable[Concatenate[Invocation, P], R]) -> Callable[P, R]:
    """A command's callback given the :class:`Invocation`, its words read from what click parsed; every
    run it records stores them (:func:`zluda_runner.results.asked.asked`)."""

    @functools.wraps(command)
    def invoked(*args: P.args, **kwargs: P.kwargs) -> R:
        ctx = click.get_current_context()
        call = replace(ctx.find_object(Invocation) or Invocation(), words=command_line(ctx))
        with asked_for(call.words):
            return command(call, *args, **kwargs)

    return invoked


def command_line(ctx: click.Context) -> tuple[str, ...]:
    """The words of the command line as parsed: each context's name, its options that are set (from a
    word, or from their environment variable), its arguments (a workload's after ``--``)."""
    chain: list[click.Context] = []
    level: click.Context | None = ctx
    while level is not None:
        chain.append(level)
        level = level.parent
    words: list[str] = []
    for level in reversed(chain):
        words.append("zluda-run" if level.parent is None else level.info_name or "")
        arguments: list[str] = []
        for param in level.command.params:
            value = level.params.get(param.name or "")
            if isinstance(param, click.Option):
                words += _option_words(param, value)
            elif param.nargs == -1 and value:
                arguments += argument_words(value)
            elif value is not None and param.nargs != -1:
                arguments.append(str(value))
        words += arguments
    return tuple(words)


def _option_words(option: click.Option, value: object) -> list[str]:
    if not option.expose_value or value is None or value is False or value == () or value == option.default:
        return []
    name = max(option.opts, key=len)
    if option.is_flag:
        return [name]
    values = value if option.multiple and isinstance(value, tuple | list) else [value]
    return [word for v in values for word in (name, str(v))]


def emit_json(data: object) -> None:
    """Print ``data`` as schema-versioned JSON on stdout."""
    to_dict = getattr(data, "to_dict", None)
    payload = to_plain(to_dict() if callable(to_dict) else data)
    if isinstance(payload, dict) and "schema" not in payload:
        payload = {"schema": JSON_SCHEMA_VERSION, **payload}
    click.echo(json.dumps(_finite(payload), indent=2, allow_nan=False))


def _finite(value: object) -> object:
    """JSON has no NaN or infinity (Python would write ``Infinity``, which other readers refuse): such a
    figure (an output's max abs error against an inf) is ``null``; the text views say what it was."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


class Number(click.FloatRange):
    """A number option held where the API holds it (finite, within ``bounds``: an annotation of
    :mod:`zluda_runner.core.argcheck` such as ``Seconds``, or a Range), so that click refuses it in its
    own words ("Invalid value for '--timeout'") before the API is called."""

    name = "number"

    def __init__(self, bounds: object = None) -> None:
        bound = bounds if isinstance(bounds, Range) else next(
            (m for m in getattr(bounds, "__metadata__", ()) if isinstance(m, Range)), Range())
        super().__init__(min=bound.ge if bound.gt is None else bound.gt, min_open=bound.gt is not None,
                         max=bound.le)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number = float(super().convert(value, param, ctx))
        if not math.isfinite(number):  # a range lets NaN through
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


SECONDS = Number(Seconds)
NOT_NEGATIVE = Number(NotNegative)
RUNS = click.IntRange(1, MAX_RUNS)


class GivenPath(click.Path):
    """A path that must name something: an empty word (an unset shell variable) is click's usage error,
    not the current folder (``Path("")`` is ``.``) nor the API's TypeError."""

    def __init__(self, *, dir_okay: bool = True) -> None:
        super().__init__(dir_okay=dir_okay, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path names no file or folder.", param, ctx)
        return super().convert(value, param, ctx)


html_option = click.option("--html", "html_file", type=GivenPath(),
                           help="Also write a self-contained HTML page to FILE.")


def write_page(path: Path | None, page: Callable[[], str], keep: Sequence[Path]) -> str | None:
    """Write a page the user asked for (``--html FILE``: :func:`~zluda_runner.results.userfiles.write_output`)
    once the runs are over: None when written (or none asked), else the error worded for the command
    line, for the caller to print after the report (a page that cannot be written must not cost the
    report that took every run to make)."""
    from zluda_runner.api.store import write_output

    try:
        if path is not None:
            write_output(path, page(), keep)
    except ZludaRunnerError as exc:
        hint = exc.hint_for("command line")
        return f"{exc.message_for('command line')}; the report is printed without it" + (
            f" ({hint})" if hint else "")
    return None
