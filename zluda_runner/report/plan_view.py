"""The terminal view of a shim plan (``zluda-run plan``)."""

from __future__ import annotations

from pathlib import Path, PureWindowsPath

from rich.console import Console
from rich.text import Text

from zluda_runner.core.textfit import line_spans, view_width
from zluda_runner.core.wording import render
from zluda_runner.plan.defaults import DEFAULTS_OFF
from zluda_runner.plan.model import ShimPlan
from zluda_runner.plan.windows import PTH_HOOK_NAME
from zluda_runner.report.terminal import make_console

_MARK = {"ok": ("ok   ", "green"), "warn": ("WARN ", "yellow"), "fatal": ("FATAL", "bold red")}


def plan_lines(plan: ShimPlan) -> list[Text]:
    """One block per binding, then environment, loader set-up, warnings and the verdict."""
    lines: list[Text] = []
    rel = plan.release
    if rel is not None:
        name = f"{rel.id} ({rel.asset})" if rel.id else "folder given with --zluda-dir"
        lines += [Text(f"release: {name}"), Text(f"  at {rel.root}")]
    tgt = plan.target
    if tgt.torch or not tgt.binary:
        lines.append(Text(f"target:  torch {tgt.torch} (CUDA {tgt.cuda}) in {tgt.python}"))
    else:
        lines.append(Text(f"target:  {tgt.binary}"))
    lines.append(Text(""))
    for b in plan.bindings:
        mark, style = _MARK[b.verdict]
        shim = Path(b.shim).name if b.shim else "-"
        line = Text(mark, style=style)
        line.append(f" {b.action:8} {b.need:26} <- {shim:24} [{b.mechanism}]")
        lines.append(line)
        lines += [Text(f"        - {reason}") for reason in b.reasons]
    if plan.env:
        lines.append(Text("\nenvironment set for the workload:"))
        lines += [Text(f"  {k}={v}") for k, v in plan.env.items()]
    lines += defaults_lines(plan)
    if plan.link_map:
        lines.append(Text("\nLD_LIBRARY_PATH gets a folder of links: " + ", ".join(sorted(plan.link_map))))
    if plan.library_path:
        lines.append(Text("then the folders of the shims' own dependencies: " + ", ".join(plan.library_path)))
    if plan.audit_library:
        who = "our redirector" if plan.audit_library == "ours" else plan.audit_library
        lines.append(Text(f"LD_AUDIT: {who} redirects " + ", ".join(sorted(plan.redirect_map))))
        if plan.audit_why:
            lines.append(Text(f"  why: {plan.audit_why}"))
    if plan.os == "windows":
        lines += windows_setup_lines(plan)
    if plan.inherited:
        lines.append(Text("child processes (torchrun workers) inherit: " + ", ".join(plan.inherited)))
    lines += [Text(f"warning: {w}", style="yellow") for w in plan.warnings]
    verdict = Text("\nverdict: ")
    verdict.append(plan.verdict, style=_MARK[plan.verdict][1])
    lines.append(verdict)
    return lines


_VEHICLE = {"env": "in the environment", "startup": "inside Python, once torch is imported", "info": "shown"}


def defaults_lines(plan: ShimPlan) -> list[Text]:
    """The "Applied for you" section: each default with its setting, fact and source; one not applied
    says why (``--no-defaults``, the user's own value)."""
    if not plan.defaults:
        return []
    lines = [Text("\napplied for you (each with its reason; --no-defaults turns them off):")]
    for d in plan.defaults:
        if d.vehicle == "info":
            head = Text(f"  {d.name}: {d.setting}")
        elif d.applied:
            head = Text(f"  {d.name}: {d.setting} ({_VEHICLE.get(d.vehicle, d.vehicle)})", style="green")
        else:
            head = Text(f"  {d.name}: not applied ({_why_not(d.why_not)}): {d.setting}", style="yellow")
        lines += [head, Text(f"      why: {d.reason}"), Text(f"      source: {d.source}")]
    return lines


def _why_not(why: str | None) -> str:
    """A default's ``why_not`` for this view's reader: the defaults switched off read as the option that
    does it (``--no-defaults`` on the command line, ``Options(defaults=False)`` for a Python caller)."""
    return render("{opt:no_defaults}") if why == DEFAULTS_OFF else why or "not applied"


def windows_setup_lines(plan: ShimPlan) -> list[Text]:
    """How a Windows plan makes ZLUDA's DLLs the ones loaded: placement, PATH, preload, injector."""
    lines: list[Text] = []
    if plan.placements:
        placed = ", ".join(f"{p.dest_name} <- {Path(p.source).name}" for p in plan.placements)
        lines.append(Text(f"\ncopied into torch/lib (originals kept, `zluda-run restore`): {placed}"))
    preload = [Path(b.shim).name for b in plan.bindings if b.mechanism == "preload" and b.shim]
    if preload:
        lines.append(Text("preloaded by full path (LoadLibraryExW) before the workload starts: "
                          + ", ".join(preload)))
    injected = [b.need for b in plan.bindings if b.mechanism == "injector"]
    if injected:
        lines.append(Text("started through the release's injector (zluda.exe), which loads: "
                          + ", ".join(injected)))
    hook = plan.startup_hook
    if hook is not None:
        where = (f"an inert {PureWindowsPath(hook.folder) / PTH_HOOK_NAME} (journaled; `zluda-run restore` "
                 "removes it)" if hook.kind == "pth" and hook.folder
                 else "a sitecustomize on a private PYTHONPATH (in the cache)")
        names = ", ".join(PureWindowsPath(p).name for p in hook.preload)
        loads = f", loading {names} by full path" if names else ""
        lines.append(Text(f"start-up code before the workload's first line: {where}{loads}"))
    if plan.path_prepend:
        lines.append(Text("PATH gets first (for the DLLs' own dependencies): "
                          + "; ".join(plan.path_prepend)))
    return lines


def render_plan(plan: ShimPlan) -> str:
    """The plan as plain text."""
    return "\n".join(line.plain for line in plan_lines(plan))


def fold(row: Text, width: int | None) -> list[Text]:
    """``row`` wrapped at spaces to ``width`` with its styles, continuation lines indented; a word (a name,
    a path) is never broken (rich folds one wider than the terminal)."""
    plain = row.plain
    if width is None or len(plain) <= width or not plain.strip():
        return [row]
    lead = len(plain) - len(plain.lstrip(" "))
    spans = line_spans(plain, width, lead, lead + 6)
    pieces = row.divide([cut for span in spans[1:] for cut in span])  # first line, line, gap, line, ...
    out = [pieces[0]]
    out[0].rstrip()
    for piece in pieces[1::2]:
        line = Text(" " * (lead + 6))
        line.append_text(piece)
        out.append(line)
    return out


def print_plan(plan: ShimPlan, console: Console | None = None) -> None:
    """The plan fitted to the terminal (``COLUMNS``; piped: the console's width): see :func:`fold`."""
    out = console or make_console()
    for line in plan_lines(plan):
        for row in line.split("\n"):
            for part in fold(row, view_width() or out.width):
                out.print(part, soft_wrap=True)
