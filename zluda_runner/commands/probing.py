"""Commands of this area (filled in as the area lands)."""

from __future__ import annotations

import click

COMMANDS: list[click.Command] = []
