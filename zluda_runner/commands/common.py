"""Small helpers shared by the command modules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from zluda_runner import JSON_SCHEMA_VERSION
from zluda_runner.core.serial import to_plain
from zluda_runner.core.settings import Settings
from zluda_runner.plan.model import ShimPlan

pass_settings = click.make_pass_decorator(Settings, ensure=True)


def emit_json(data: Any) -> None:
    """Print ``data`` as schema-versioned JSON on stdout."""
    payload = to_plain(data.to_dict() if hasattr(data, "to_dict") else data)
    if isinstance(payload, dict) and "schema" not in payload:
        payload = {"schema": JSON_SCHEMA_VERSION, **payload}
    click.echo(json.dumps(payload, indent=2))


def record(kind: str, report: object, settings: Settings, command: list[str], *,
           release: dict[str, Any] | None = None, target: dict[str, Any] | None = None) -> None:
    """Keep a run's report in the results store (unless ``--no-record``); a store problem is a
    warning on stderr, never a failed run."""
    if not settings.record:
        return
    from zluda_runner.host.quick import quick_facts
    from zluda_runner.results.recording import record_report

    outcome = record_report(kind, report, settings=settings, command=command, release=release,
                            target=target, host=quick_facts().fingerprint())
    if outcome.warning:
        click.echo(f"warning: {outcome.warning}", err=True)


def plan_refs(plan: ShimPlan) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The release and target of a plan, as the results store records them."""
    rel = plan.release
    release = {"id": rel.id or "zluda-dir", "asset": rel.asset} if rel else None
    major = (plan.target.cuda or "").split(".")[0]
    target: dict[str, Any] = (
        {"torch_version": plan.target.torch, "cuda_major": int(major) if major.isdigit() else None}
        if plan.target.torch else {"binary": plan.target.binary or (plan.argv[0] if plan.argv else None)}
    )
    return release, target


html_option = click.option("--html", "html_file", type=click.Path(path_type=Path),
                           help="Also write a self-contained HTML page to FILE.")
