"""CLI commands, one module per area; each module exports ``COMMANDS``."""

from __future__ import annotations

import click

from . import fetching, hosting, inspecting, launching, probing, releases

ALL_COMMANDS: list[click.Command] = [
    *releases.COMMANDS,
    *fetching.COMMANDS,
    *inspecting.COMMANDS,
    *launching.COMMANDS,
    *probing.COMMANDS,
    *hosting.COMMANDS,
]
