"""Pick the ZLUDA asset that fits a host and a target, and say why every other one does not.

An asset *fits* when it is built for the requested OS and architecture, its HIP
requirement accepts the requested HIP version (or cannot be judged), and it can
serve torch built for the requested CUDA major. Among the assets that fit, the
preference order is, criterion by criterion (the first difference decides):

1. HIP match: with ``hip`` given, an asset built for that HIP version (known bounds
   that accept it) beats one that only needs the AMD driver's HIP runtime, which beats
   one whose HIP requirement is unknown.
2. Stable before nightly, releases before pre-releases.
3. Confirmed asset names before names the manifest could not confirm.
4. Known SHA-256 before unknown (a known hash can be verified without trust-on-first-use).
5. Newer version first (within the manifest, versions compare numerically; "unknown" last).
6. Manifest order (earlier entry wins).

So Windows + HIP SDK 6.2 + torch cu118 picks the fork's ``ZLUDA-windows-rocm6-amd64.zip``
(the rewrite cannot serve CUDA 11 torch, and the rocm5 build needs HIP SDK 5.7).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.errors import SelectionError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.manifest import (
    ARCHES,
    OSES,
    UNKNOWN,
    Asset,
    Manifest,
    Release,
    load_manifest,
    parse_version,
)


def host_os() -> str | None:
    """"linux" / "windows" for this machine, None where ZLUDA has no build (macOS)."""
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform in ("win32", "cygwin"):
        return "windows"
    return None


@dataclass
class Choice(JsonMixin):
    """The selected release + asset, and what the user should know about it."""

    release: Release
    asset: Asset
    notes: list[str] = field(default_factory=list)

    @property
    def release_id(self) -> str:
        return self.release.id

    def summary(self) -> dict[str, object]:
        """A compact JSON view: the release's identity and caveats plus the chosen asset."""
        return {
            "release": self.release.id,
            "flavour": self.release.flavour,
            "version": self.release.version,
            "tag": self.release.tag,
            "caveats": self.release.caveats,
            "asset": self.asset.to_dict(),
            "hash_known": self.asset.hash_known,
            "notes": self.notes,
        }


@dataclass
class Rejection(JsonMixin):
    """Why an asset was not chosen. ``fits`` is true when it would work but ranked lower."""

    release_id: str
    asset_name: str
    reasons: list[str]
    fits: bool = False


@dataclass
class Constraints(JsonMixin):
    os: str
    arch: str
    hip: str | None
    cuda: int | None
    release: str | None


@dataclass
class Selection(JsonMixin):
    constraints: Constraints
    chosen: Choice | None
    rejected: list[Rejection]

    def require(self) -> Choice:
        """The choice, or a SelectionError that lists why nothing fits."""
        if self.chosen is not None:
            return self.chosen
        c = self.constraints
        lines = [f"{r.release_id}/{r.asset_name}: {'; '.join(r.reasons)}" for r in self.rejected]
        wanted = f"os={c.os} arch={c.arch} hip={c.hip or 'any'} cuda={c.cuda or 'any'}"
        raise SelectionError(
            f"no ZLUDA release in the manifest fits {wanted}:\n  " + "\n  ".join(lines),
            hint="change --hip/--cuda (e.g. install torch built for CUDA 11.8 for the fork), or pass "
            "--zluda-dir with a ZLUDA you built yourself",
        )


# --------------------------------------------------------------------------- fitting


def _misfits(release: Release, asset: Asset, c: Constraints) -> tuple[list[str], list[str]]:
    """(reasons it does not fit, notes about how it fits)."""
    reasons: list[str] = []
    notes: list[str] = []
    if asset.os != c.os:
        reasons.append(f"built for {asset.os}, not {c.os}")
    if asset.arch != c.arch:
        reasons.append(f"built for {asset.arch}, not {c.arch}")
    verdict = asset.hip.accepts(c.hip) if c.hip else None
    if c.hip:
        if verdict is False:
            reasons.append(f"needs {asset.hip.describe()}, you have {c.hip}")
        elif verdict is None:
            notes.append(f"its HIP requirement is unknown ({asset.hip.describe()}); {c.hip} may not work")
        elif asset.hip.kind == "driver":
            notes.append(f"needs no HIP SDK: {asset.hip.describe()}")
        elif asset.hip.confidence not in ("documented",):
            need = asset.hip.describe()
            notes.append(f"its HIP requirement ({need}) is {asset.hip.confidence}, not documented")
    elif asset.hip.kind != "driver":
        notes.append(f"HIP not checked (no --hip given): it needs {asset.hip.describe()}")
    if c.cuda is not None and not asset.serves_cuda(c.cuda):
        if not asset.cuda_majors:
            reasons.append(
                f"cannot serve torch built for CUDA {c.cuda} (it serves no torch build; see its caveats)"
            )
        else:
            served = ", ".join(str(m) for m in asset.cuda_majors)
            reasons.append(f"cannot serve torch built for CUDA {c.cuda} (serves {served})")
    if not asset.name_confirmed:
        notes.append("the asset name is not confirmed by a source; the download may 404 (use --archive)")
    if not asset.hash_known:
        notes.append("SHA-256 unknown: fetching needs --trust-on-first-use or --archive")
    if not asset.files_verified:
        notes.append("its file list was not verified against the archive")
    return reasons, notes


# --------------------------------------------------------------------------- ranking

_Criterion = tuple[str, Callable[[Release, Asset, Constraints], float]]


def _hip_rank(release: Release, asset: Asset, c: Constraints) -> float:
    if not c.hip:
        return 0
    if asset.hip.kind == "driver":
        return 1
    return 2 if asset.hip.accepts(c.hip) else 0


def _version_rank(release: Release, asset: Asset, c: Constraints) -> float:
    if release.version == UNKNOWN:
        return -1
    major, *rest = (*parse_version(release.version), 0, 0, 0)
    return major * 1_000_000 + rest[0] * 1_000 + rest[1]


CRITERIA: list[_Criterion] = [
    ("built for your HIP version", _hip_rank),
    ("stable build", lambda r, a, c: int(a.channel == "stable") + int(not r.prerelease)),
    ("confirmed asset name", lambda r, a, c: int(a.name_confirmed)),
    ("known SHA-256", lambda r, a, c: int(a.hash_known)),
    ("newer version", _version_rank),
]

_LOWER_BECAUSE = {
    "built for your HIP version": "is not built for your HIP version specifically",
    "stable build": "is a nightly/pre-release build",
    "confirmed asset name": "has an unconfirmed asset name",
    "known SHA-256": "has no known SHA-256",
    "newer version": "is an older version",
}


def _rank_key(release: Release, asset: Asset, c: Constraints, order: int) -> tuple[float, ...]:
    return (*(fn(release, asset, c) for _, fn in CRITERIA), -order)


def _why_lower(winner: tuple[float, ...], loser: tuple[float, ...]) -> str:
    for (name, _), w, lo in zip(CRITERIA, winner, loser, strict=False):
        if w != lo:
            return _LOWER_BECAUSE[name]
    return "comes later in the manifest"


def select_asset(
    manifest: Manifest | Path | None,
    *,
    os: str | None = None,
    hip: str | None = None,
    cuda: int | None = None,
    arch: str = "x86_64",
    release: str | None = None,
) -> Selection:
    """Choose an asset for ``os`` (default: this host), ``hip`` ("6.2"), ``cuda`` (torch's CUDA major).

    ``release`` (id, version or tag) restricts the choice to that release. Never raises
    for "nothing fits": ``chosen`` is None and every asset has its reasons. ``manifest`` may
    also be a path or None (the packaged manifest), loaded with :func:`load_manifest`.
    """
    if not isinstance(manifest, Manifest):
        manifest = load_manifest(manifest)
    target_os = os or host_os()
    if target_os is None:
        raise SelectionError(
            f"ZLUDA has no build for this platform ({sys.platform})",
            hint="pass --os linux or --os windows to see what those would get",
        )
    if target_os not in OSES:
        raise SelectionError(f"unknown OS {target_os!r}", hint=f"use one of: {', '.join(OSES)}")
    if arch not in ARCHES:
        raise SelectionError(f"unknown architecture {arch!r}", hint=f"ZLUDA builds: {', '.join(ARCHES)}")
    if hip is not None:
        try:
            parse_version(hip)
        except ValueError:
            raise SelectionError(
                f"HIP version {hip!r} is not a version", hint="give it as MAJOR.MINOR, e.g. --hip 6.2"
            ) from None
    if cuda is not None and not 1 <= cuda <= 99:
        raise SelectionError(
            f"CUDA major {cuda} is out of range", hint="torch cu118 -> 11, cu126 -> 12, cu130 -> 13"
        )
    wanted: Release | None = manifest.find(release) if release else None

    c = Constraints(os=target_os, arch=arch, hip=hip, cuda=cuda, release=wanted.id if wanted else None)
    rejected: list[Rejection] = []
    fitting: list[tuple[tuple[float, ...], Release, Asset, list[str]]] = []
    order = 0
    for rel in manifest.releases:
        for asset in rel.assets:
            order += 1
            reasons, notes = _misfits(rel, asset, c)
            if wanted is not None and rel.id != wanted.id:
                reasons.insert(0, f"not the requested release '{wanted.id}'")
            if reasons:
                rejected.append(Rejection(rel.id, asset.name, reasons))
            else:
                fitting.append((_rank_key(rel, asset, c, order), rel, asset, notes))
    if not fitting:
        return Selection(constraints=c, chosen=None, rejected=rejected)
    fitting.sort(key=lambda item: item[0], reverse=True)
    best_key, best_rel, best_asset, best_notes = fitting[0]
    chosen = Choice(release=best_rel, asset=best_asset, notes=best_notes)
    for key, rel, asset, _notes in fitting[1:]:
        why = _why_lower(best_key, key)
        reason = f"fits, but {best_rel.id}/{best_asset.name} is preferred: this one {why}"
        rejected.append(Rejection(rel.id, asset.name, [reason], fits=True))
    return Selection(constraints=c, chosen=chosen, rejected=rejected)

