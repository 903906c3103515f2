"""What ``zluda-run releases`` shows: the manifest's releases, or a selection, with provenance.

:func:`releases_report` is the one library call behind the command; :meth:`ReleasesReport.to_json_dict`
is its JSON, :mod:`zluda_runner.report.releases_view` its text.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.wording import render
from zluda_runner.release.manifest import load_current_manifest
from zluda_runner.release.model import Asset, Manifest, Release
from zluda_runner.release.native import NativeWheels, native_wheels
from zluda_runner.release.selection import Resolution, Selection, nothing_fits
from zluda_runner.release.update import URL_ENV, cached_origin, older_than_known, staleness_warning

HIP_GIVEN = "given"  # hip_source for a HIP version the caller gave: a word, not a front end's flag
HIP_FOUND = "found on this host"


@dataclass
class ReleasesReport:
    """The manifest in use, where it came from, and (with constraints) the selection."""

    manifest: Manifest
    selection: Selection | None
    hip_source: str | None = None  # HIP_GIVEN (the caller's own), or where the host's HIP version was found
    origin: dict[str, str] | None = None
    warnings: list[str] = field(default_factory=list)
    fix: str | None = None  # nothing fits: how to get a release that fits (the one nothing-fits hint)
    every: bool = False  # every OS's assets with their sources (``--all``), not this OS's one line each
    # AMD's native ROCm PyTorch wheels for the GPU and OS selected for (None: no GPU known)
    native: NativeWheels | None = None

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
            "fix": render(self.fix).split("\n  ") if self.fix else None,
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
            "native_wheels": self.native.to_dict() if self.native is not None else None,
            "releases": [r.to_dict() for r in m.releases],
        }


def releases_report(manifest_path: Path | None, cache_dir: Path | None, *,
                    resolution: Resolution | None = None, hip_source: str | None = None,
                    today: dt.date | None = None) -> ReleasesReport:
    """The manifest in use (the resolution's, when there is one: the release ``run`` would take for the
    same constraints) and where it came from, with its staleness and the resolution's warnings."""
    manifest = (resolution.manifest if resolution is not None
                else load_current_manifest(manifest_path, cache_dir))
    origin = cached_origin(cache_dir) if cache_dir is not None and manifest_path is None else None
    if origin is not None and manifest.source and not manifest.source.startswith(str(cache_dir)):
        origin = None  # the cached copy was not newer: the packaged one is in use
    warnings = [w for w in (staleness_warning(manifest, today), older_than_known(manifest, cache_dir)) if w]
    if resolution is None:
        return ReleasesReport(manifest, None, hip_source, origin, warnings)
    warnings += [w for w in (resolution.cuda_note, *resolution.selection.warnings) if w]
    fix = nothing_fits(resolution, said_by="releases").hint if resolution.chosen is None else None
    c = resolution.constraints
    return ReleasesReport(manifest, resolution.selection, hip_source, origin, warnings, fix,
                          native=native_wheels(manifest, c.gfx, c.os))


def update_url(url: str | None, cache_dir: Path) -> str | None:
    """``manifest update``'s URL: as given, else ``$ZLUDA_RUNNER_MANIFEST_URL`` (read by the update
    itself), else the URL the cached manifest was fetched from, else (None here: the update reads it)
    the ``update_url`` the manifest in use names: the project's published manifest."""
    if url or os.environ.get(URL_ENV):
        return url
    origin = cached_origin(cache_dir)
    return origin["url"] if origin else None


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
