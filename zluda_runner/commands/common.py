"""Small helpers shared by the command modules."""

from __future__ import annotations

import json
from typing import Any

import click

from zluda_runner import JSON_SCHEMA_VERSION
from zluda_runner.core.serial import to_plain
from zluda_runner.core.settings import Settings

pass_settings = click.make_pass_decorator(Settings, ensure=True)


def emit_json(data: Any) -> None:
    """Print ``data`` as schema-versioned JSON on stdout."""
    payload = to_plain(data)
    if isinstance(payload, dict) and "schema" not in payload:
        payload = {"schema": JSON_SCHEMA_VERSION, **payload}
    click.echo(json.dumps(payload, indent=2))


def want_json(settings: Settings, local_flag: bool) -> bool:
    """``--json`` may be given before or after the command name."""
    return settings.json or local_flag
