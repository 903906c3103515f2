"""``zluda-run inspect``: what a CUDA build needs, under which names, found where."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.settings import Settings
from zluda_runner.target.inspect import inspect_path, inspect_python
from zluda_runner.target.profile import LibraryNeed, TargetProfile


def _short(path: str | None, base: str | None) -> str:
    if path is None:
        return "-"
    norm = os.path.normpath(path)
    if base and norm.startswith(base + os.sep):
        return "<sp>/" + norm[len(base) + 1:]
    return norm


def _requesters(names: list[str], limit: int = 2) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" +{len(names) - limit}" if len(names) > limit else "")


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return lines


def _base_dir(profile: TargetProfile) -> str | None:
    if profile.torch and profile.torch.path:
        return os.path.normpath(str(Path(profile.torch.path).parent))
    return None


def _need_row(lib: LibraryNeed, base: str | None) -> list[str]:
    resolved = lib.resolved
    return [
        lib.family,
        lib.name,
        _requesters(lib.requested_by),
        ",".join(lib.versions_required) or "-",
        str(len(lib.symbols)),
        resolved.rule if resolved else "?",
        _short(resolved.path if resolved else None, base),
    ]


def _reach_summary(profile: TargetProfile) -> list[str]:
    """Per requester and rule, the libraries it reaches that way on its own."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for lib in profile.libraries:
        for reach in lib.reach:
            if reach.via in ("rpath", "runpath", "ld_library_path", "dll-load-dir", "user-dir"):
                grouped.setdefault((reach.requester, reach.rule), []).append(lib.name)
    return [f"  {req} reaches through {rule.replace(' of ' + req, '')}: {', '.join(names)}"
            for (req, rule), names in grouped.items()]


def render_profile(profile: TargetProfile) -> str:
    """The human view of a TargetProfile."""
    out: list[str] = []
    base = _base_dir(profile)
    if profile.torch is not None:
        t = profile.torch
        build = f"CUDA {profile.cuda_version}" if profile.cuda_version else profile.build
        out.append(f"torch {t.version} ({build}, {profile.os}) at {t.path}")
    if profile.python:
        out.append(f"python {profile.python} ({profile.python_version})")
    if base:
        out.append(f"<sp> = {base}")
    if profile.roots:
        out.append("loading simulated from: " + ", ".join(_short(r, base) for r in profile.roots))
    out.append("")
    header = ["FAMILY", "NEEDED", "REQUESTED BY", "VERSIONS", "SYMS", "FOUND BY", "PATH"]
    out += _table([_need_row(lib, base) for lib in profile.libraries], header)
    if profile.dlopened:
        out.append("")
        out.append("opened at run time by name (dlopen/LoadLibrary):")
        rows = [[d.family, d.name, _requesters(d.opened_by, 3), d.resolved.rule if d.resolved else "?",
                 _short(d.resolved.path if d.resolved else None, base)] for d in profile.dlopened]
        out += _table(rows, ["FAMILY", "NAME", "OPENED BY", "FOUND BY", "PATH"])
    reach = _reach_summary(profile)
    if reach:
        out.append("")
        out.append("how each object reaches its CUDA libraries on its own:")
        out += reach
    if profile.warnings:
        out.append("")
        out += [f"warning: {w}" for w in profile.warnings]
    return "\n".join(out)


@click.command("inspect")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--python", "python", metavar="PY", help="Inspect the torch of this interpreter.")
@click.option("--json", "as_json", is_flag=True, help="Print the TargetProfile as JSON.")
@pass_settings
def inspect_command(settings: Settings, path: Path | None, python: str | None, as_json: bool) -> None:
    """What does this CUDA build need, under which names, and where would the loader find it?

    \b
    PATH may be a torch folder, a site-packages folder or one ELF/PE binary;
    without PATH the torch of --python (default: this interpreter) is inspected.
    """
    python = python or settings.python
    if path is not None and python:
        raise click.UsageError("give either PATH or --python, not both")
    cache_dir = settings.cache_dir
    if path is not None:
        profile = inspect_path(path, cache_dir=cache_dir)
    else:
        profile = inspect_python(python or sys.executable, cache_dir=cache_dir)
    if want_json(settings, as_json):
        emit_json(profile)
    else:
        click.echo(render_profile(profile))


COMMANDS: list[click.Command] = [inspect_command]
