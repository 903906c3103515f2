"""The terminal view of a shim plan (``zluda-run plan``)."""

from __future__ import annotations

from pathlib import Path, PureWindowsPath

from zluda_runner.core.wording import render
from zluda_runner.plan.defaults import DEFAULTS_OFF
from zluda_runner.plan.model import ShimPlan
from zluda_runner.plan.windows import PTH_HOOK_NAME
from zluda_runner.report.terminal import say

_MARK = {"ok": "ok   ", "warn": "WARN ", "fatal": "FATAL"}


def plan_lines(plan: ShimPlan) -> list[str]:
    """One block per binding, then environment, loader set-up, warnings and the verdict."""
    lines: list[str] = []
    rel = plan.release
    if rel is not None:
        name = f"{rel.id} ({rel.asset})" if rel.id else "folder given with --zluda-dir"
        lines += [f"release: {name}", f"  at {rel.root}"]
    tgt = plan.target
    if tgt.torch or not tgt.binary:
        lines.append(f"target:  torch {tgt.torch} (CUDA {tgt.cuda}) in {tgt.python}")
    else:
        lines.append(f"target:  {tgt.binary}")
    lines.append("")
    for b in plan.bindings:
        shim = Path(b.shim).name if b.shim else "-"
        lines.append(f"{_MARK[b.verdict]} {b.action:8} {b.need:26} <- {shim:24} [{b.mechanism}]")
        lines += [f"        - {reason}" for reason in b.reasons]
    if plan.env:
        lines.append("\nenvironment set for the workload:")
        lines += [f"  {k}={v}" for k, v in plan.env.items()]
    lines += defaults_lines(plan)
    if plan.link_map:
        lines.append("\nLD_LIBRARY_PATH gets a folder of links: " + ", ".join(sorted(plan.link_map)))
    if plan.library_path:
        lines.append("then the folders of the shims' own dependencies: " + ", ".join(plan.library_path))
    if plan.audit_library:
        who = "our redirector" if plan.audit_library == "ours" else plan.audit_library
        lines.append(f"LD_AUDIT: {who} redirects " + ", ".join(sorted(plan.redirect_map)))
        if plan.audit_why:
            lines.append(f"  why: {plan.audit_why}")
    if plan.os == "windows":
        lines += windows_setup_lines(plan)
    if plan.inherited:
        lines.append("child processes (torchrun workers) inherit: " + ", ".join(plan.inherited))
    lines += [f"warning: {w}" for w in plan.warnings]
    lines.append(f"\nverdict: {plan.verdict}")
    return lines


_VEHICLE = {"env": "in the environment", "startup": "inside Python, once torch is imported", "info": "shown"}


def defaults_lines(plan: ShimPlan) -> list[str]:
    """The "Applied for you" section: each default with its setting, fact and source; one not applied
    says why (``--no-defaults``, the user's own value)."""
    if not plan.defaults:
        return []
    lines = ["\napplied for you (each with its reason; --no-defaults turns them off):"]
    for d in plan.defaults:
        if d.vehicle == "info":
            head = f"  {d.name}: {d.setting}"
        elif d.applied:
            head = f"  {d.name}: {d.setting} ({_VEHICLE.get(d.vehicle, d.vehicle)})"
        else:
            head = f"  {d.name}: not applied ({_why_not(d.why_not)}): {d.setting}"
        lines += [head, f"      why: {d.reason}", f"      source: {d.source}"]
    return lines


def _why_not(why: str | None) -> str:
    """A default's ``why_not`` for this view's reader: the defaults switched off read as the option that
    does it (``--no-defaults`` on the command line, ``Options(defaults=False)`` for a Python caller)."""
    return render("{opt:no_defaults}") if why == DEFAULTS_OFF else why or "not applied"


def windows_setup_lines(plan: ShimPlan) -> list[str]:
    """How a Windows plan makes ZLUDA's DLLs the ones loaded: placement, PATH, preload, injector."""
    lines: list[str] = []
    if plan.placements:
        placed = ", ".join(f"{p.dest_name} <- {Path(p.source).name}" for p in plan.placements)
        lines.append(f"\ncopied into torch/lib (originals kept, `zluda-run restore`): {placed}")
    preload = [Path(b.shim).name for b in plan.bindings if b.mechanism == "preload" and b.shim]
    if preload:
        lines.append("preloaded by full path (LoadLibraryExW) before the workload starts: "
                          + ", ".join(preload))
    injected = [b.need for b in plan.bindings if b.mechanism == "injector"]
    if injected:
        lines.append("started through the release's injector (zluda.exe), which loads: "
                          + ", ".join(injected))
    hook = plan.startup_hook
    if hook is not None:
        where = (f"an inert {PureWindowsPath(hook.folder) / PTH_HOOK_NAME} (journaled; `zluda-run restore` "
                 "removes it)" if hook.kind == "pth" and hook.folder
                 else "a sitecustomize on a private PYTHONPATH (in the cache)")
        names = ", ".join(PureWindowsPath(p).name for p in hook.preload)
        loads = f", loading {names} by full path" if names else ""
        lines.append(f"start-up code before the workload's first line: {where}{loads}")
    if plan.path_prepend:
        lines.append("PATH gets first (for the DLLs' own dependencies): "
                          + "; ".join(plan.path_prepend))
    return lines


def print_plan(plan: ShimPlan) -> None:
    """The plan fitted to the terminal (``COLUMNS``): wrapped at spaces, continuation lines indented 6."""
    say(plan_lines(plan), hang=6)
