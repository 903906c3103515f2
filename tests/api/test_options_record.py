"""One options record: the command line's global options are the API's Options fields by name, and
every field reaches the library's settings (issue 27, point 9): no hand-copied list to forget one in."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import click

from zluda_runner.api.options import Options, to_settings
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings

_FLIPPED = {"record": "no_record", "defaults": "no_defaults"}  # --no-record is record=False


def _set(name: str, default: object) -> object:
    if isinstance(default, bool):
        return not default
    return "postgresql://h/db" if name == "results_db" else "py3" if name in ("python", "release") \
        else Path("/given") / name


def test_every_field_reaches_the_settings() -> None:
    given = {f.name: _set(f.name, f.default) for f in fields(Options)}
    settings = to_settings(Options(**given))  # type: ignore[arg-type]
    assert {name: getattr(settings, name) for name in given} == given


def test_the_settings_are_the_options_and_what_one_launch_asks() -> None:
    """The stages' form is Options itself (declared once) with what one launch asks for, nothing else."""
    assert issubclass(Settings, Options)
    assert [f.name for f in fields(Settings)] == [*(f.name for f in fields(Options)), "verify_load",
                                                  "trace_out", "hip"]  # hip: find's other HIP, a lock's


def test_every_field_is_a_global_option_of_the_command_line() -> None:
    names = {p.name for p in main_group.params if isinstance(p, click.Option)}
    assert {_FLIPPED.get(f.name, f.name) for f in fields(Options)} <= names


def test_the_command_line_builds_the_options_by_name(tmp_path: Path) -> None:
    ctx = main_group.make_context("zluda-run", ["--no-record", "--force", "--release", "v6",
                                                "--cache-dir", str(tmp_path), "releases"])
    with ctx:
        ctx.invoke(main_group.callback, **ctx.params)  # type: ignore[arg-type]
    options = ctx.obj.options
    assert (options.record, options.force, options.release) == (False, True, "v6")
    assert options.cache_dir == tmp_path
