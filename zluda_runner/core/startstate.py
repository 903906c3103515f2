"""This interpreter as the ``zluda-run`` command line found it when it started: its ``sys.path`` and its
environment, remembered by :func:`zluda_runner.cli.main` before anything changes them. A target interpreter
that is this one, as it started, is asked here rather than started again
(:func:`zluda_runner.inspection.selffacts.started_here`); a library caller remembers nothing, so its
targets are always run."""

from __future__ import annotations

import os
import sys

_AT_START: list[tuple[list[str], dict[str, str]]] = []


def remember() -> None:
    """Remember ``sys.path`` and the environment as they are now: the command line's start."""
    _AT_START[:] = [(list(sys.path), dict(os.environ))]


def at_start() -> tuple[list[str], dict[str, str]] | None:
    """``sys.path`` and the environment at the command line's start; None outside the command line."""
    return _AT_START[0] if _AT_START else None
