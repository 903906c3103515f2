"""The terminal view of a target profile (``zluda-run inspect``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from zluda_runner.core.textfit import Col, fit_table, view_width
from zluda_runner.inspection.profile import LibraryNeed, TargetProfile
from zluda_runner.report.terminal import say as echo

_OWN_RULES = ("rpath", "runpath", "ld_library_path", "dll-load-dir", "user-dir")
#: names and paths are never broken; narrower than the table, syms, versions and family go first
NEED_COLUMNS = [Col("family", drop=3, head=True), Col("needed", wrap=False, head=True), Col("requested by"),
                Col("versions", drop=4), Col("syms", right=True, drop=5), Col("found by"),
                Col("path", wrap=False)]
OPENED_COLUMNS = [Col("family", drop=3, head=True), Col("name", wrap=False, head=True), Col("opened by"),
                  Col("found by"), Col("path", wrap=False)]


def short_path(path: str | None, base: str | None) -> str:
    """``path`` with the site-packages folder shown as ``<sp>``."""
    if path is None:
        return "-"
    norm = os.path.normpath(path)
    if base and norm.startswith(base + os.sep):
        return "<sp>/" + norm[len(base) + 1:]
    return norm


def _requesters(names: Sequence[str], limit: int = 2) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" +{len(names) - limit}" if len(names) > limit else "")


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
        short_path(resolved.path if resolved else None, base),
    ]


def reach_summary(profile: TargetProfile) -> list[str]:
    """Per requester and rule, the libraries it reaches that way on its own."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for lib in profile.libraries:
        for reach in lib.reach:
            if reach.via in _OWN_RULES:
                grouped.setdefault((reach.requester, reach.rule), []).append(lib.name)
    return [f"{req} reaches through {rule.replace(' of ' + req, '')}: {', '.join(names)}"
            for (req, rule), names in grouped.items()]


def startup_lines(profile: TargetProfile) -> list[str]:
    """How the interpreter builds ``sys.path``: a ``._pth`` file (portable layout) or the usual rules."""
    st = profile.startup
    if st is None:
        return []
    site = "site runs (.pth files and sitecustomize are processed)" if st.site_enabled else \
        "site does not run (no .pth file or sitecustomize is processed)"
    if st.pth_file:
        lines = [f"start-up: {st.pth_file} fixes sys.path (portable layout): PYTHONPATH is ignored; {site}"]
        lines.append("  sys.path: " + ("; ".join(st.sys_path) or "(empty)"))
    else:
        env = "honours PYTHONPATH" if st.honours_pythonpath else "ignores PYTHONPATH (-E/-I)"
        lines = [f"start-up: no ._pth file: {env}; {site}"]
    if st.site_packages:
        lines.append("  site-packages: " + "; ".join(st.site_packages))
    return lines


def print_profile(profile: TargetProfile, width: int | None = -1) -> None:
    """What the build needs, found where, and how each object reaches its libraries, fitted to
    ``width`` (default: the terminal's, :func:`~zluda_runner.core.textfit.view_width`) without
    breaking a name."""
    fit = view_width() if width == -1 else width
    lines: list[str] = []
    say = lines.append
    base = _base_dir(profile)
    if profile.torch is not None:
        t = profile.torch
        build = f"CUDA {profile.cuda_version}" if profile.cuda_version else profile.build
        say(f"torch {t.version} ({build}, {profile.os}) at {t.path}")
    if profile.python:
        say(f"python {profile.python} ({profile.python_version})")
    lines += startup_lines(profile)
    if base:
        say(f"<sp> = {base}")
    if profile.roots:
        say("loading simulated from: " + ", ".join(short_path(r, base) for r in profile.roots))
    lines += fit_table(NEED_COLUMNS, [_need_row(lib, base) for lib in profile.libraries], fit)
    if profile.dlopened:
        rows = [[d.family, d.name, _requesters(d.opened_by, 3), d.resolved.rule if d.resolved else "?",
                 short_path(d.resolved.path if d.resolved else None, base)] for d in profile.dlopened]
        say("opened at run time by name (" + ("LoadLibrary" if profile.os == "windows" else "dlopen") + ")")
        lines += fit_table(OPENED_COLUMNS, rows, fit)
    reach = reach_summary(profile)
    if reach:
        say("how each object reaches its CUDA libraries on its own:")
        for line in reach:
            say("  " + line)
    lines += [f"warning: {warning}" for warning in profile.warnings]
    echo(lines, width=fit)
