"""What ``zluda-run releases`` shows: the manifest's releases, or a selection, with provenance.

:func:`releases_report` is the one library call behind the command; :func:`render_text`
and :meth:`ReleasesReport.to_json_dict` are its views.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.redact import redact_url
from zluda_runner.core.textfit import Col, fit_table, view_width, wrap_text
from zluda_runner.release.manifest import load_current_manifest
from zluda_runner.release.model import Asset, Fact, Manifest, Release
from zluda_runner.release.selection import Selection, describe_constraints, host_os, parse_cuda, select_asset
from zluda_runner.release.update import URL_ENV, cached_origin, older_than_known, staleness_warning


@dataclass
class ReleasesReport:
    """The manifest in use, where it came from, and (with constraints) the selection."""

    manifest: Manifest
    selection: Selection | None
    hip_source: str | None = None  # "--hip", or where the host's HIP version was found
    origin: dict[str, str] | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def nothing_fits(self) -> bool:
        return self.selection is not None and self.selection.chosen is None

    def to_json_dict(self) -> dict[str, object]:
        sel = self.selection
        m = self.manifest
        return {
            "schema": 1,
            "manifest": {"source": m.source, "schema_version": m.schema_version,
                         "manifest_version": m.manifest_version, "updated": m.updated,
                         "published_by": m.published_by, "origin": self.origin},
            "warnings": self.warnings,
            "hip_source": self.hip_source,
            "constraints": sel.constraints.to_dict() if sel else None,
            "selected": sel.chosen.summary() if sel and sel.chosen else None,
            "requested": [r.to_dict() for r in sel.requested] if sel else [],
            "instead": sel.instead.summary() if sel and sel.instead else None,
            "rejected": [r.to_dict() for r in sel.rejected] if sel else [],
            "offered_previews": [{"release": rel.id, "asset": a.name, "date": rel.date, "commit": rel.commit,
                                  "sha256": a.sha256, "url": a.url,
                                  "sources": {k: a.fact(k).to_dict() for k in ("name", "sha256")}
                                  | {"date": rel.fact("date").to_dict()}}
                                 for rel, a in offered_previews(self)],
            "releases": [r.to_dict() for r in m.releases],
        }


def releases_report(
    *,
    manifest_path: Path | None,
    cache_dir: Path | None,
    os_name: str | None = None,
    hip: str | None = None,
    cuda: str | int | None = None,
    release: str | None = None,
    channel: str = "stable",
    gfx: str | None = None,
    detect_hip: Callable[[], str | None] | None = None,
    today: dt.date | None = None,
    for_host: bool = False,
    detect_cuda: Callable[[], tuple[str | None, str | None]] | None = None,
) -> ReleasesReport:
    """Load the manifest in use and, when any constraint is given (or ``for_host``: this host and the
    target's torch, as ``run`` selects), select an asset. ``detect_cuda`` reads the target torch's CUDA
    (``for_host`` without ``cuda``): ``(cuda, None)`` or ``(None, why not)``.

    Without ``hip``, ``detect_hip`` (the host's HIP version finder) is asked when selecting
    for this host's OS, so ``releases`` judges HIP the same way ``run`` does.
    """
    manifest = load_current_manifest(manifest_path, cache_dir)
    origin = cached_origin(cache_dir) if cache_dir is not None and manifest_path is None else None
    if origin is not None and manifest.source and not manifest.source.startswith(str(cache_dir)):
        origin = None  # the cached copy was not newer: the packaged one is in use
    warnings = [w for w in (staleness_warning(manifest, today), older_than_known(manifest, cache_dir)) if w]
    if for_host and cuda is None and detect_cuda is not None and (os_name or host_os()) == host_os():
        cuda, why_not = detect_cuda()
        warnings.extend([why_not] if why_not else [])
    major = parse_cuda(cuda)
    constrained = (for_host or any(v is not None for v in (os_name, hip, major, release, gfx))
                   or channel != "stable")
    hip_source = "--hip" if hip else None
    if constrained and hip is None and detect_hip is not None and (os_name or host_os()) == host_os():
        hip = detect_hip()
        hip_source = "found on this host" if hip else None
    selection = (
        select_asset(manifest, os=os_name, hip=hip, cuda=major, release=release, channel=channel, gfx=gfx)
        if constrained
        else None
    )
    if selection is not None:
        warnings.extend(selection.warnings)
    return ReleasesReport(manifest, selection, hip_source, origin, warnings)


def update_url(url: str | None, cache_dir: Path) -> str | None:
    """``manifest update``'s URL: as given, else ``$ZLUDA_RUNNER_MANIFEST_URL`` (read by the update
    itself), else the URL the cached manifest was fetched from, else (None here: the update reads it)
    the ``update_url`` the manifest in use names: the project's published manifest."""
    if url or os.environ.get(URL_ENV):
        return url
    origin = cached_origin(cache_dir)
    return origin["url"] if origin else None


# --------------------------------------------------------------------------- text view


def _asset_row(release: Release, asset: Asset) -> list[str]:
    majors = ",".join(str(m) for m in asset.cuda_majors) or "-"
    flags = []
    if asset.channel != "stable":
        flags.append(asset.channel)
    if not asset.name_confirmed:
        flags.append("name unconfirmed")
    if any(f.stub for f in asset.files):
        flags.append("stubs: " + ",".join(sorted({f.family for f in asset.files if f.stub})))
    sha = asset.fact("sha256").label() if asset.hash_known else "unknown"
    return [
        release.id,
        release.date or "?",
        asset.os,
        asset.hip.short(),
        asset.fact("hip").label(),
        majors,
        sha,
        asset.name + (f"  ({'; '.join(flags)})" if flags else ""),
    ]


HEADER = ["ID", "DATE", "OS", "HIP", "HIP SOURCE", "CUDA", "SHA-256", "ASSET"]
#: narrower than the table: HIP SOURCE goes first, then SHA-256, then DATE; then a list per asset
COLUMNS = [Col("ID", wrap=False, head=True), Col("DATE", drop=3), Col("OS", wrap=False, head=True),
           Col("HIP"), Col("HIP SOURCE", drop=5), Col("CUDA", wrap=False), Col("SHA-256", drop=4),
           Col("ASSET", head=True)]  # the asset's name has no space: it wraps only before its notes


def _manifest_line(report: ReleasesReport) -> str:
    m = report.manifest
    line = (f"manifest version {m.manifest_version}, updated {m.updated}, published by {m.published_by}; "
            f"read from {m.source}")
    if report.origin:
        line += f" (fetched from {report.origin['url']} at {report.origin['fetched']})"
    return line


def _provenance_lines(release: Release, asset: Asset) -> list[str]:
    out = []
    facts = {**asset.provenance, **{f"release {k}": v for k, v in release.provenance.items()}}
    for name, fact in facts.items():
        text = fact.cite()
        if fact.note:
            text += f" ({fact.note})"
        out.append(f"  source: {name}: {text}")
    return out


def render_listing(report: ReleasesReport, width: int | None = None) -> str:
    m = report.manifest
    rows = [_asset_row(r, a) for r in m.releases for a in r.assets]
    text = "\n".join(fit_table(COLUMNS, rows, width))
    summary = f"{len(m.releases)} releases, {len(rows)} assets\n{_manifest_line(report)}"
    return f"{text}\n\n" + wrap_text(summary, width)


def render_selection(report: ReleasesReport) -> str:
    sel = report.selection
    assert sel is not None
    c = sel.constraints
    hip_note = f" (HIP {report.hip_source})" if report.hip_source and c.hip else ""
    out = [f"wanted: {describe_constraints(c)}{hip_note}"]
    if sel.requested:
        out.append(f"requested release {c.release} does not fit:")
        out.extend(f"  {r.asset_name}: {'; '.join(r.reasons)}" for r in sel.requested)
    if sel.chosen is None:
        out.append("selected: nothing fits")
        if sel.instead is not None:
            out.append(f"  without --release: {sel.instead.release.id}/{sel.instead.asset.name} fits")
    else:
        ch = sel.chosen
        rel = ch.release
        pre = ", a GitHub pre-release" if rel.prerelease else ""
        out.append(f"selected: {rel.id} ({rel.flavour} {rel.version}, tag {rel.tag}, "
                   f"{rel.date or 'date unknown'}{pre})")
        out.append(f"  asset:  {ch.asset.name}")
        out.append(f"  url:    {redact_url(ch.asset.url)}")
        out.append(f"  sha256: {ch.asset.sha256 or 'unknown'}")
        out.append(f"  needs:  {ch.asset.hip.describe()}; serves torch built for CUDA "
                   + (", ".join(str(m) for m in ch.asset.cuda_majors) or "-"))
        out.extend(f"  note:   {n}" for n in ch.notes)
        out.extend(f"  caveat: {cv}" for cv in ch.release.caveats)
        out.extend(_provenance_lines(rel, ch.asset))
    offered = offered_previews(report)
    if offered:
        out.append("preview and nightly builds on offer (pick one with --release ID):")
        for rel, asset in offered:
            commit = f", commit {rel.commit}" if rel.commit else ""
            out.append(f"  {rel.id}/{asset.name} ({rel.date or 'date unknown'}{commit})")
            out.append(f"    sha256: {asset.sha256 or 'unknown'} [{_cite(asset.fact('sha256'))}]")
            out.append(f"    source: name: {_cite(asset.fact('name'))}")
            out.append(f"    source: release date: {_cite(rel.fact('date'))}")
    rest = [r for r in sel.rejected if r not in sel.requested]
    if rest:
        out.append("not selected:")
        for rej in rest:
            out.append(f"  {rej.release_id}/{rej.asset_name}: {'; '.join(rej.reasons)}")
    return "\n".join(out)


def _cite(fact: Fact) -> str:
    return fact.cite() + (f" ({fact.note})" if fact.note else "")


def offered_previews(report: ReleasesReport) -> list[tuple[Release, Asset]]:
    """With ``--channel preview``: the nightly/preview assets that fit (chosen or ranked lower), newest first
    as the manifest lists them."""
    sel = report.selection
    if sel is None or sel.constraints.channel == "stable":
        return []
    fitting = {(r.release_id, r.asset_name) for r in sel.rejected if r.fits}
    if sel.chosen is not None:
        fitting.add((sel.chosen.release.id, sel.chosen.asset.name))
    return [(rel, asset) for rel in report.manifest.releases for asset in rel.assets
            if asset.channel != "stable" and (rel.id, asset.name) in fitting]


def render_text(report: ReleasesReport, width: int | None = None, more: list[str] | None = None) -> str:
    """The report as text no wider than ``width`` (words never broken; ``None``: one line per row)."""
    if report.selection is not None:
        body = wrap_text(render_selection(report) + "\n" + _manifest_line(report), width)
    else:
        body = render_listing(report, width)
    return body + "".join("\n" + wrap_text(w, width) for w in [*(f"warning: {w}" for w in report.warnings),
                                                               *(more or [])])


def render_for_terminal(report: ReleasesReport, more: list[str]) -> str:
    """:func:`render_text` at this terminal's width (``COLUMNS``; none when piped), ``more`` lines last."""
    return render_text(report, view_width(), more)
