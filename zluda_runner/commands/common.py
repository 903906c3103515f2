"""Small helpers shared by the command modules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from zluda_runner import JSON_SCHEMA_VERSION
from zluda_runner.core.serial import to_plain
from zluda_runner.core.settings import Settings

pass_settings = click.make_pass_decorator(Settings, ensure=True)


def emit_json(data: Any) -> None:
    """Print ``data`` as schema-versioned JSON on stdout."""
    payload = to_plain(data.to_dict() if hasattr(data, "to_dict") else data)
    if isinstance(payload, dict) and "schema" not in payload:
        payload = {"schema": JSON_SCHEMA_VERSION, **payload}
    click.echo(json.dumps(payload, indent=2))


def record(kind: str, report: object, settings: Settings, command: list[str], *,
           release: dict[str, Any] | None = None, target: dict[str, Any] | None = None) -> None:
    """Keep a run in the results store; a store problem is a warning, never a failed run."""
    from zluda_runner.results.recording import record_for

    warning = record_for(kind, report, settings, command, release=release, target=target)
    if warning:
        click.echo(f"warning: {warning}", err=True)


html_option = click.option("--html", "html_file", type=click.Path(path_type=Path),
                           help="Also write a self-contained HTML page to FILE.")
def warn(text: str) -> None:
    click.echo(f"warning: {text}", err=True)
