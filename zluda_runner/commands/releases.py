"""``zluda-run releases``: list the manifest's ZLUDA releases, or pick one for given constraints."""

from __future__ import annotations

import click

from zluda_runner.commands.common import emit_json, pass_settings, want_json
from zluda_runner.core.settings import Settings
from zluda_runner.release.manifest import OSES, Asset, Manifest, Release, load_manifest
from zluda_runner.release.selection import Selection, select_asset


def _asset_row(release: Release, asset: Asset) -> list[str]:
    majors = ",".join(str(m) for m in asset.cuda_majors) or "-"
    flags = []
    if asset.channel != "stable":
        flags.append(asset.channel)
    if not asset.name_confirmed:
        flags.append("name unconfirmed")
    return [
        release.id,
        release.version,
        asset.os,
        asset.hip.short(),
        majors,
        "yes" if asset.hash_known else "unknown",
        asset.name + (f"  ({', '.join(flags)})" if flags else ""),
    ]


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


HEADER = ["ID", "VERSION", "OS", "HIP", "CUDA", "SHA-256", "ASSET"]


def render_listing(manifest: Manifest) -> str:
    rows = [_asset_row(r, a) for r in manifest.releases for a in r.assets]
    text = _table(rows, HEADER)
    return f"{text}\n\n{len(manifest.releases)} releases, {len(rows)} assets (manifest {manifest.source})"


def render_selection(sel: Selection) -> str:
    c = sel.constraints
    out = [f"wanted: os={c.os} arch={c.arch} hip={c.hip or 'any'} cuda={c.cuda or 'any'}"
           + (f" release={c.release}" if c.release else "")]
    if sel.chosen is None:
        out.append("selected: nothing fits")
    else:
        ch = sel.chosen
        rel = ch.release
        out.append(f"selected: {rel.id} ({rel.flavour} {rel.version}, tag {rel.tag})")
        out.append(f"  asset:  {ch.asset.name}")
        out.append(f"  url:    {ch.asset.url}")
        out.append(f"  sha256: {ch.asset.sha256 or 'unknown'}")
        out.append(f"  needs:  {ch.asset.hip.describe()}; serves torch built for CUDA "
                   + (", ".join(str(m) for m in ch.asset.cuda_majors) or "-"))
        out.extend(f"  note:   {n}" for n in ch.notes)
        out.extend(f"  caveat: {cv}" for cv in ch.release.caveats)
    if sel.rejected:
        out.append("not selected:")
        for rej in sel.rejected:
            out.append(f"  {rej.release_id}/{rej.asset_name}: {'; '.join(rej.reasons)}")
    return "\n".join(out)


def selection_json(manifest: Manifest, sel: Selection | None) -> dict[str, object]:
    return {
        "schema": 1,
        "manifest": {"source": manifest.source, "schema_version": manifest.schema_version,
                     "manifest_version": manifest.manifest_version},
        "constraints": sel.constraints.to_dict() if sel else None,
        "selected": sel.chosen.summary() if sel and sel.chosen else None,
        "rejected": [r.to_dict() for r in sel.rejected] if sel else [],
        "releases": [r.to_dict() for r in manifest.releases],
    }


@click.command("releases")
@click.option("--os", "os_name", type=click.Choice(OSES), help="Select for this OS (default: this host's).")
@click.option("--hip", metavar="X.Y", help="The HIP SDK / ROCm version you have, e.g. 6.2.")
@click.option("--cuda", type=int, metavar="N", help="The CUDA major your torch is built for (cu118 -> 11).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema 1).")
@pass_settings
def releases_command(
    settings: Settings, os_name: str | None, hip: str | None, cuda: int | None, as_json: bool
) -> None:
    """List the ZLUDA releases in the manifest; with --os/--hip/--cuda (or --release), pick one.

    \b
      zluda-run releases
      zluda-run releases --os windows --hip 6.2 --cuda 11
    """
    manifest = load_manifest(settings.manifest)
    constrained = any(v is not None for v in (os_name, hip, cuda, settings.release))
    sel = (
        select_asset(manifest, os=os_name, hip=hip, cuda=cuda, release=settings.release)
        if constrained
        else None
    )
    if want_json(settings, as_json):
        emit_json(selection_json(manifest, sel))
        return
    click.echo(render_selection(sel) if sel else render_listing(manifest))


COMMANDS: list[click.Command] = [releases_command]
