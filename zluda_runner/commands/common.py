"""Small helpers shared by the command modules, and what the global options said (:class:`Invocation`)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click

from zluda_runner.api import Options
from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.serial import to_plain
from zluda_runner.core.version import JSON_SCHEMA_VERSION


@dataclass(frozen=True)
class Invocation:
    """The global options of one ``zluda-run`` command line: the API's :class:`Options` (what every call
    takes), and what only the command line has (``--json`` output; ``--trace``, ``--trace-out`` and
    ``--verify-load`` choose which API call a launch is)."""

    options: Options = field(default_factory=Options)
    json: bool = False
    trace: bool = False
    trace_out: Path | None = None
    verify_load: bool = False


pass_invocation = click.make_pass_decorator(Invocation, ensure=True)


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


def warn(text: str) -> None:
    """One ``warning:`` line on stderr (what the API's ``on_warning`` hears)."""
    click.echo(f"warning: {text}", err=True)


html_option = click.option("--html", "html_file", type=click.Path(path_type=Path),
                           help="Also write a self-contained HTML page to FILE.")


def write_page(write: Callable[[], object]) -> str | None:
    """Write a page the user asked for (``--html FILE``) once the runs are over: None when written, else
    the error worded for the command line, for the caller to print after the report (a page that
    cannot be written must not cost the report that took every run to make)."""
    try:
        write()
    except ZludaRunnerError as exc:
        hint = exc.hint_for("command line")
        return f"{exc.message_for('command line')}; the report is printed without it" + (
            f" ({hint})" if hint else "")
    return None
