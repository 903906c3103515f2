"""A release that is not downloaded yet, described by the manifest alone (``zluda-run plan``).

``plan`` never downloads: the layout comes from the manifest's file list, with the files at the
paths they would have once unpacked. Verdicts that need the files themselves (SONAME, symbol
versions, exports, the shims' own dependencies) are then provisional, and the plan says what
``run`` would download.
"""

from __future__ import annotations

from pathlib import Path

from zluda_runner.release.layout import ReleaseLayout, shim_of_file
from zluda_runner.release.model import Asset


def provisional_layout(root: Path, asset: Asset) -> ReleaseLayout:
    """The layout ``asset`` will have unpacked at ``root``, from its manifest entry alone."""
    shims = tuple(shim_of_file(root / f.path, f) for f in asset.files)
    return ReleaseLayout(root=str(root), os=asset.os, shims=shims)


def download_note(release_id: str, asset: Asset) -> str:
    size = f"{asset.size / 1e6:.1f} MB" if asset.size else "size not in the manifest"
    return (f"release {release_id} is not downloaded yet: this plan comes from the manifest's file list, "
            f"and verdicts that need the files themselves are provisional; `zluda-run run` (or "
            f"`zluda-run fetch {release_id}`) downloads {asset.name} ({size})")
