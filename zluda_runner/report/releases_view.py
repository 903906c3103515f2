"""``zluda-run releases`` as text: the manifest's releases as a table fitted to the terminal, or a
selection with the provenance of each fact (the data: :mod:`zluda_runner.release.listing`)."""

from __future__ import annotations

from zluda_runner.core.redact import redact_url
from zluda_runner.core.textfit import Col, fit_table, view_width, wrap_text
from zluda_runner.core.wording import render
from zluda_runner.release.listing import HIP_GIVEN, ReleasesReport, offered_previews
from zluda_runner.release.model import Asset, Fact, Release
from zluda_runner.release.selection import Rejection, brief_reason, describe_constraints


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
    facts = {**asset.provenance, **{f"release {k}": v for k, v in release.provenance.items()}}
    return [f"  source: {name}: {_cite(fact)}" for name, fact in facts.items()]


def render_listing(report: ReleasesReport, width: int | None = None) -> str:
    m = report.manifest
    rows = [_asset_row(r, a) for r in m.releases for a in r.assets]
    text = "\n".join(fit_table(COLUMNS, rows, width))
    summary = f"{len(m.releases)} releases, {len(rows)} assets\n{_manifest_line(report)}"
    return f"{text}\n\n" + wrap_text(summary, width)


def _hip_source(source: str) -> str:
    """Where the HIP version came from, for this view's reader: given, by the option that gives it."""
    return f"{source} by {render('{opt:hip}')}" if source == HIP_GIVEN else source


def render_selection(report: ReleasesReport) -> str:
    sel = report.selection
    assert sel is not None
    c = sel.constraints
    hip_note = f" (HIP {_hip_source(report.hip_source)})" if report.hip_source and c.hip else ""
    out = [f"wanted: {describe_constraints(c)}{hip_note}"]
    if sel.requested:
        out.append(f"requested release {c.release} does not fit:")
        out.extend(f"  {r.asset_name}: {'; '.join(r.reasons)}" for r in sel.requested)
    if sel.chosen is None:
        out.append("selected: nothing fits")
        if sel.instead is not None:
            out.append(f"  without --release: {sel.instead.release.id}/{sel.instead.asset.name} fits")
        if report.fix:
            out.append(f"fix: {render(report.fix)}")
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
    native = report.native.line() if report.native is not None else None
    if native:
        out.append(render(native))
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
    if report.every:
        out += ["not selected:"] * bool(rest)
        out += [f"  {rej.release_id}/{rej.asset_name}: {'; '.join(rej.reasons)}" for rej in rest]
    elif rest:
        out += _not_selected_here(report, rest)
    return "\n".join(out)


def _not_selected_here(report: ReleasesReport, rest: list[Rejection]) -> list[str]:
    """The assets not selected that are built for the OS selected for: every one with its reasons and
    their sources where one was selected, one line per release in brief where nothing fits; a count of
    the other OSes' assets, and that ``--all`` lists them all."""
    sel = report.selection
    assert sel is not None
    target = sel.constraints.os
    built = {(r.id, a.name): a.os for r in report.manifest.releases for a in r.assets}
    here = [r for r in rest if built.get((r.release_id, r.asset_name), target) == target]
    elsewhere = len(rest) - len(here)
    others = f"{elsewhere} asset(s) for another OS not shown; " if elsewhere else ""
    out = [f"not selected for {target} ({others}{render('{cmd:releases --all}')} lists every "
           "asset):"] if here or elsewhere else []
    if sel.chosen is not None:
        return out + [f"  {rej.release_id}/{rej.asset_name}: {'; '.join(rej.reasons)}" for rej in here]
    by_release: dict[str, list[str]] = {}
    for rej in here:
        briefs = by_release.setdefault(rej.release_id, [])
        briefs += [b for b in map(brief_reason, rej.reasons) if b not in briefs]
    return out + [f"  {release}: {'; '.join(briefs)}" for release, briefs in by_release.items()]


def _cite(fact: Fact) -> str:
    return fact.cite() + (f" ({fact.note})" if fact.note else "")


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
