"""Pick the ZLUDA asset that fits a host and a target, and say why every other one does not.

An asset *fits* when it is built for the requested OS and architecture, its HIP
requirement accepts the requested HIP version (or cannot be judged), it can serve torch
built for the requested CUDA major, and its channel is offered (nightly and preview builds
only with ``channel="preview"``). Among the assets that fit, the preference order is,
criterion by criterion (the first difference decides):

1. HIP match: with ``hip`` given, an asset built for that HIP version (known bounds
   that accept it) beats one that only needs the AMD driver's HIP runtime, which beats
   one whose HIP requirement is unknown.
2. PyTorch works with that HIP as it is (for a torch target): an asset whose publisher
   says PyTorch needs something more (upstream v6 on Windows: AMD's TheRock SDK) ranks lower.
3. Better-sourced HIP requirement: publisher or maintainer statement > third-party pins
   or usage > inferred / unverified (see :class:`~zluda_runner.release.model.Fact`).
4. Stable before nightly/preview.
5. Confirmed asset name before names no source confirms.
6. Known SHA-256 before unknown; more independent pins first.
7. Newer version first ("unknown" last).
8. Manifest order (earlier entry wins).

The choice carries notes that say when it rests on a weak fact. So Windows + HIP SDK 6.4 +
torch cu118 picks fork 3.9.5's rocm6 zip: 3.9.6's generic zip needs HIP SDK 7 (its maintainer,
lshqqytiger/ZLUDA#134 and #137), and upstream v6 needs the TheRock SDK for PyTorch.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core import exitcodes
from zluda_runner.core.errors import SelectionError
from zluda_runner.core.hipfound import HipFound
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.gpurules import rule_reasons, rule_warnings, rules_against
from zluda_runner.release.manifest import load_manifest
from zluda_runner.release.model import (
    ARCHES,
    OSES,
    UNKNOWN,
    Asset,
    Fact,
    GpuHipRule,
    HipRequirement,
    Manifest,
    Release,
    parse_version,
)

CHANNEL_CHOICES = ("stable", "preview")

__all__ = ["CHANNEL_CHOICES", "Choice", "Constraints", "NothingFitsError", "Rejection", "Resolution",
           "Selection", "describe_constraints", "host_os", "parse_cuda", "resolve", "select_asset"]


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

    def evidence(self) -> dict[str, str]:
        """Each sourced fact of the asset and the release -> its kind (``third-party pin (3 independent)``).
        """
        facts = {**{f"release.{k}": v for k, v in self.release.provenance.items()}, **self.asset.provenance}
        return {name: fact.label() for name, fact in facts.items()}

    def summary(self) -> dict[str, object]:
        """A compact JSON view: the release's identity and caveats plus the chosen asset."""
        return {
            "release": self.release.id,
            "flavour": self.release.flavour,
            "version": self.release.version,
            "tag": self.release.tag,
            "date": self.release.date,
            "prerelease": self.release.prerelease,
            "caveats": self.release.caveats,
            "asset": self.asset.to_dict(),
            "hash_known": self.asset.hash_known,
            "evidence": self.evidence(),
            "notes": self.notes,
        }


@dataclass
class Rejection(JsonMixin):
    """Why an asset was not chosen. ``fits`` is true when it would work but ranked lower."""

    release_id: str
    asset_name: str
    reasons: list[str]
    fits: bool = False
    # what alone stands in the way on this OS: "hip" (its HIP requirement, ``needs``) or "cuda"
    blocked_by: str | None = None
    needs: str | None = None


@dataclass
class Constraints(JsonMixin):
    os: str
    arch: str
    hip: str | None
    cuda: int | None
    release: str | None
    channel: str = "stable"
    gfx: str | None = None
    hip_from: str | None = None  # where the host HIP comes from: rocm, hip-sdk, distribution (None: unknown)


@dataclass
class Selection(JsonMixin):
    """The outcome. ``requested`` lists why a requested release (``--release``) does not fit,
    ``instead`` the asset that would be chosen without that request; ``warnings`` host facts
    that stand in the way of any release (a GPU that needs another HIP version)."""

    constraints: Constraints
    chosen: Choice | None
    rejected: list[Rejection]
    requested: list[Rejection] = field(default_factory=list)
    instead: Choice | None = None
    warnings: list[str] = field(default_factory=list)
    hip_blocked: list[tuple[Rejection, HipRequirement]] = field(default_factory=list, repr=False)
    gpu_rules: list[GpuHipRule] = field(default_factory=list)  # the manifest's rules this GPU + HIP break


class NothingFitsError(SelectionError):
    """No release fits the host and the target (every path: run, plan, warmup, fetch, releases): exit 3."""

    exit_code = exitcodes.CHECK_FAILED

    def __init__(self, message: str, hint: str | None = None, *, selection: Selection | None = None) -> None:
        super().__init__(message, hint)
        self.selection = selection


@dataclass(frozen=True)
class Resolution:
    """The one answer to "which release does this run take": the selection for the constraints it was
    judged on, the HIP found in words, and (``cuda_note``) why torch's CUDA could not be read."""

    manifest: Manifest = field(repr=False)
    selection: Selection
    found: HipFound | None = None
    cuda_note: str | None = None

    @property
    def constraints(self) -> Constraints:
        return self.selection.constraints

    @property
    def chosen(self) -> Choice | None:
        return self.selection.chosen

    @property
    def candidates(self) -> list[Choice]:
        """Every asset that fits, best first: the choice, then the others in the order :func:`select_asset`
        ranked them (its rejections that fit); what ``find`` tries, nothing selected again."""
        if self.selection.chosen is None:
            return []
        ranked = [self.selection.chosen]
        for rejection in self.selection.rejected:
            if rejection.fits:
                release = next(r for r in self.manifest.releases if r.id == rejection.release_id)
                asset = next(a for a in release.assets if a.name == rejection.asset_name)
                ranked.append(Choice(release, asset))
        return ranked

    def require(self) -> Choice:
        """The choice, or the one "nothing fits" error (:func:`nothing_fits`, exit 3)."""
        if self.selection.chosen is not None:
            return self.selection.chosen
        raise nothing_fits(self)


def resolve(
    manifest: Manifest,
    found: HipFound | None,
    *,
    os: str | None = None,
    cuda: int | None = None,
    release: str | None = None,
    channel: str = "stable",
    gfx: str | None = None,
    cuda_note: str | None = None,
) -> Resolution:
    """The release for the host's HIP (``found``, with its origin), torch's CUDA major and the GPU ``gfx``
    (the manifest's GPU x HIP rules): :func:`select_asset`, with the HIP found in words."""
    selection = select_asset(manifest, os=os, hip=found.version if found else None, cuda=cuda,
                             release=release, channel=channel, gfx=gfx,
                             hip_from=found.origin if found else None)
    return Resolution(manifest, selection, found, cuda_note)


def describe_constraints(c: Constraints) -> str:
    text = f"os={c.os} arch={c.arch} hip={c.hip or 'any'} cuda={c.cuda or 'any'} channel={c.channel}"
    if c.hip and c.hip_from:
        text += f" hip_from={c.hip_from}"
    if c.gfx:
        text += f" gpu={c.gfx}"
    return text + (f" release={c.release}" if c.release else "")


def parse_cuda(value: str | int | None) -> int | None:
    """torch's CUDA as the user writes it -> its major: ``11``, ``cu118``, ``12.8``, ``cu130``."""
    if value is None or isinstance(value, int):
        return value
    text = value.strip().lower().removeprefix("cu")
    if text.isdigit() and len(text) >= 3:  # cu118 -> 11.8, cu130 -> 13.0
        return int(text[:-1])
    try:
        return parse_version(text)[0]
    except ValueError:
        raise SelectionError(
            f"CUDA version {value!r} is not one", hint="give torch's CUDA as 11, 12.8 or cu118"
        ) from None


# --------------------------------------------------------------------------- fitting


def _weak(fact: Fact, what: str) -> str | None:
    if not fact.weak:
        return None
    refs = f" ({fact.refs(2)})" if fact.sources else ""
    note = f": {fact.note}" if fact.note else ""
    return f"{what} rests on a weak source: {fact.label()}{refs}{note}"


def _misfits(release: Release, asset: Asset, c: Constraints,
             rules: Sequence[GpuHipRule] = ()) -> tuple[list[str], list[str]]:
    """(reasons it does not fit, notes about how it fits)."""
    reasons: list[str] = []
    notes: list[str] = []
    if asset.os != c.os:
        reasons.append(f"built for {asset.os}, not {c.os}")
    if asset.arch != c.arch:
        reasons.append(f"built for {asset.arch}, not {c.arch}")
    hip_fact = asset.fact("hip")
    verdict = asset.hip.accepts(c.hip) if c.hip else None
    if c.hip:
        if verdict is False:
            label = asset.hip.label
            why = f" ({label})" if label and not label.startswith(asset.hip.describe()) else ""
            reasons.append(f"needs {asset.hip.describe()}, you have {c.hip}{why} [{hip_fact.cite()}]")
        elif verdict is None:
            notes.append(f"its HIP requirement is unknown ({asset.hip.describe()}); {c.hip} may not work")
        elif asset.hip.kind == "driver":
            notes.append(f"needs no HIP SDK: {asset.hip.describe()}")
        if verdict is not False and (weak := _weak(hip_fact, "its HIP requirement")):
            notes.append(weak)
    elif asset.hip.kind != "driver":
        notes.append(f"HIP not checked (no --hip given and none found): it needs {asset.hip.describe()}")
    if c.gfx and asset.os == c.os:
        reasons.extend(rule_reasons(asset, c.gfx, c.hip, rules))
    if c.cuda is not None and asset.hip.torch_needs:
        notes.append(f"PyTorch with this build needs {asset.hip.torch_needs}")
    if c.cuda is not None and not asset.serves_cuda(c.cuda):
        cite = f" [{asset.fact('cuda_majors').cite()}]"
        if not asset.cuda_majors:
            reasons.append(f"cannot serve torch built for CUDA {c.cuda} (it serves no torch build){cite}")
        else:
            served = ", ".join(str(m) for m in asset.cuda_majors)
            reasons.append(f"cannot serve torch built for CUDA {c.cuda} (serves {served}){cite}")
    if asset.channel != "stable" and c.channel == "stable":
        reasons.append(f"a {asset.channel} build: offered only with --channel preview")
    if not asset.name_confirmed:
        notes.append(f"the asset name is not confirmed by a source ({asset.fact('name').note}); the download "
                     "may 404 (use --archive)")
    elif weak := _weak(asset.fact("name"), "the asset name"):
        notes.append(weak)
    if not asset.hash_known:
        notes.append("SHA-256 unknown (no source publishes one): fetching needs --trust-on-first-use "
                     "or --archive")
    elif weak := _weak(asset.fact("sha256"), "the SHA-256"):
        notes.append(weak)
    if not asset.files_verified:
        notes.append(f"its file list is {asset.fact('files').label()}, not checked against the archive")
    for f in asset.files if c.hip else ():
        if c.hip and f.broken_on(c.hip):
            src = f" [{f.hip_broken_source.kind}: {f.hip_broken_source.ref}]" if f.hip_broken_source else ""
            notes.append(f"its {f.path} ({f.family}) does not work on HIP {c.hip}{src}: calls into it fail")
    stubs = sorted({f.family for f in asset.files if f.stub})
    if stubs:
        notes.append("stand-ins that are stubs (calls fail): " + ", ".join(stubs))
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
    parts = [*parse_version(release.version), 0, 0]
    return parts[0] * 1_000_000 + parts[1] * 1_000 + parts[2]


def _hash_rank(release: Release, asset: Asset, c: Constraints) -> float:
    if not asset.hash_known:
        return 0
    return 1 + (asset.fact("sha256").independent or 0)


CRITERIA: list[_Criterion] = [
    ("built for your HIP version", _hip_rank),
    ("PyTorch works on your HIP as is", lambda r, a, c: int(c.cuda is None or not a.hip.torch_needs)),
    ("better-sourced HIP requirement", lambda r, a, c: a.fact("hip").tier if c.hip else 0),
    ("stable build", lambda r, a, c: int(a.channel == "stable")),
    ("confirmed asset name", lambda r, a, c: int(a.name_confirmed)),
    ("known SHA-256", _hash_rank),
    ("newer version", _version_rank),
]

_LOWER_BECAUSE = {
    "built for your HIP version": "is not built for your HIP version specifically",
    "PyTorch works on your HIP as is": "needs more than your HIP for PyTorch",
    "better-sourced HIP requirement": "has a less well-sourced HIP requirement",
    "stable build": "is a nightly/preview build",
    "confirmed asset name": "has an unconfirmed asset name",
    "known SHA-256": "has a less well-pinned SHA-256",
    "newer version": "is an older version",
}


def _rank_key(release: Release, asset: Asset, c: Constraints, order: int) -> tuple[float, ...]:
    return (*(fn(release, asset, c) for _, fn in CRITERIA), -order)


def _why_lower(winner: tuple[float, ...], loser: tuple[float, ...]) -> str:
    for (name, _), w, lo in zip(CRITERIA, winner, loser, strict=False):
        if w != lo:
            return _LOWER_BECAUSE[name]
    return "comes later in the manifest"


def _check_inputs(os: str | None, arch: str, hip: str | None, cuda: int | None, channel: str) -> str:
    target_os = os or host_os()
    if target_os is None:
        raise SelectionError(
            f"ZLUDA has no build for this platform ({sys.platform})",
            hint="pass {opt:os linux} or {opt:os windows} to see what those would get",
        )
    if target_os not in OSES:
        raise SelectionError(f"unknown OS {target_os!r}", hint=f"use one of: {', '.join(OSES)}")
    if arch not in ARCHES:
        raise SelectionError(f"unknown architecture {arch!r}", hint=f"ZLUDA builds: {', '.join(ARCHES)}")
    if channel not in CHANNEL_CHOICES:
        raise SelectionError(f"unknown channel {channel!r}", hint=f"use one of: {', '.join(CHANNEL_CHOICES)}")
    if hip is not None:
        try:
            parse_version(hip)
        except ValueError:
            raise SelectionError(
                f"HIP version {hip!r} is not a version", hint="give it as MAJOR.MINOR, e.g. {opt:hip 6.2}"
            ) from None
    if cuda is not None and not 1 <= cuda <= 99:
        raise SelectionError(
            f"CUDA major {cuda} is out of range", hint="torch cu118 -> 11, cu126 -> 12, cu130 -> 13"
        )
    return target_os


def _blocker(asset: Asset, c: Constraints, reasons: list[str]) -> str | None:
    """"hip" / "cuda" when that alone keeps an asset for this OS, arch and channel out, else None."""
    own = [r for r in reasons if not r.startswith("not the requested release")]
    if asset.os != c.os or asset.arch != c.arch or not own:
        return None
    if all(r.startswith("needs ") for r in own):
        return "hip"
    if all(r.startswith("cannot serve torch") for r in own):
        return "cuda"
    return None


def select_asset(
    manifest: Manifest | Path | None,
    *,
    os: str | None = None,
    hip: str | None = None,
    cuda: int | None = None,
    arch: str = "x86_64",
    release: str | None = None,
    channel: str = "stable",
    gfx: str | None = None,
    hip_from: str | None = None,
) -> Selection:
    """Choose an asset for ``os`` (default: this host), ``hip`` ("6.2"), ``cuda`` (torch's CUDA major).

    ``release`` (id, version or tag) restricts the choice to that release; when it does not
    fit, ``Selection.requested`` says why first. ``channel="preview"`` also offers nightly and
    preview builds. ``gfx`` (``gfx1201``) applies the manifest's GPU x HIP rules (``hip_from``: where the
    host's HIP comes from, for rules about one kind of install): an asset a rule keeps out is rejected with
    the rule's words, and the rules the host's HIP breaks are ``warnings`` and ``gpu_rules``.
    Never raises for "nothing fits": ``chosen`` is None and every asset has its reasons.
    ``manifest`` may also be a path or None (the packaged manifest).
    """
    if not isinstance(manifest, Manifest):
        manifest = load_manifest(manifest)
    target_os = _check_inputs(os, arch, hip, cuda, channel)
    wanted: Release | None = manifest.find(release) if release else None
    c = Constraints(os=target_os, arch=arch, hip=hip, cuda=cuda, release=wanted.id if wanted else None,
                    channel=channel, gfx=gfx, hip_from=hip_from)
    return _select(manifest, c, wanted)


def _select(manifest: Manifest, c: Constraints, wanted: Release | None) -> Selection:
    rules = [r for r in manifest.gpu_hip_rules if c.gfx and r.applies(c.gfx, c.os, c.hip_from)]
    rejected: list[Rejection] = []
    requested: list[Rejection] = []
    hip_blocked: list[tuple[Rejection, HipRequirement]] = []
    fitting: list[tuple[tuple[float, ...], Release, Asset, list[str]]] = []
    others_fitting: list[tuple[tuple[float, ...], Release, Asset, list[str]]] = []
    order = 0
    for rel in manifest.releases:
        for asset in rel.assets:
            order += 1
            reasons, notes = _misfits(rel, asset, c, rules)
            key = _rank_key(rel, asset, c, order)
            if wanted is not None and rel.id != wanted.id:
                if not reasons:
                    others_fitting.append((key, rel, asset, notes))
                reasons.insert(0, f"not the requested release '{wanted.id}'")
            if reasons:
                rejection = Rejection(rel.id, asset.name, reasons, blocked_by=_blocker(asset, c, reasons))
                if rejection.blocked_by == "hip":
                    rejection.needs = asset.hip.describe()
                    hip_blocked.append((rejection, asset.hip))
                elif rejection.blocked_by == "cuda":
                    served = ", ".join(str(m) for m in asset.cuda_majors)
                    rejection.needs = f"torch built for CUDA {served}" if served else None
                rejected.append(rejection)
                if wanted is not None and rel.id == wanted.id:
                    requested.append(rejection)
            else:
                fitting.append((key, rel, asset, notes))
    broken = rules_against(manifest.gpu_hip_rules, c.gfx, c.hip, c.os, c.hip_from)
    warnings = rule_warnings(broken, c.gfx, c.hip, c.os, c.hip_from)
    if not fitting:
        instead = None
        if others_fitting:
            others_fitting.sort(key=lambda item: item[0], reverse=True)
            _, rel, asset, notes = others_fitting[0]
            instead = Choice(rel, asset, notes)
        return Selection(c, None, rejected, requested=requested, instead=instead, warnings=warnings,
                         hip_blocked=hip_blocked, gpu_rules=broken)
    fitting.sort(key=lambda item: item[0], reverse=True)
    best_key, best_rel, best_asset, best_notes = fitting[0]
    chosen = Choice(release=best_rel, asset=best_asset, notes=best_notes)
    for key, rel, asset, _notes in fitting[1:]:
        why = _why_lower(best_key, key)
        reason = f"fits, but {best_rel.id}/{best_asset.name} is preferred: this one {why}"
        rejected.append(Rejection(rel.id, asset.name, [reason], fits=True))
    return Selection(c, chosen, rejected, requested=requested, warnings=warnings, hip_blocked=hip_blocked,
                     gpu_rules=broken)


# --------------------------------------------------------------------------- nothing fits

_MAX_NEED_LINES = 5


def _route_fits(resolution: Resolution, gives: Sequence[str], origin: str | None) -> list[str]:
    """What is selected with each HIP a route gives, all else the same: a route line names only those."""
    c, manifest = resolution.constraints, resolution.manifest
    wanted = manifest.find(c.release) if c.release else None
    picks = (_select(manifest, dataclasses.replace(c, hip=v, hip_from=origin), wanted).chosen for v in gives)
    return list(dict.fromkeys(p.release.id for p in picks if p is not None))


def blocked_needs(pool: Sequence[Rejection]) -> dict[tuple[str, str], list[str]]:
    """What alone keeps each release built for the OS selected for out: ``("hip" | "cuda", what it needs)``
    -> the release ids, in the manifest's order."""
    by_need: dict[tuple[str, str], list[str]] = {}
    for rej in pool:
        if rej.blocked_by and rej.needs:
            ids = by_need.setdefault((rej.blocked_by, rej.needs), [])
            if rej.release_id not in ids:
                ids.append(rej.release_id)
    return by_need


def nothing_fits(resolution: Resolution, said_by: str | None = None) -> NothingFitsError:
    """The short "nothing fits" error every path gives (run, plan, warmup, fetch, releases, doctor): what
    was found, what each release for this OS would need, the GPU x HIP rules the host breaks with their
    fixes, how to get there on this system, or ``--zluda-dir``; the long list stays behind ``releases``.
    ``said_by``: the command that says it (``"releases"``, ``"doctor"``), which does not point to itself."""
    selection, found = resolution.selection, resolution.found
    c = selection.constraints
    have = found.text if found is not None else (f"HIP {c.hip}" if c.hip else "no HIP/ROCm found")
    torch = f", torch built for CUDA {c.cuda}" if c.cuda else ""
    if c.release:
        head = f"release {c.release} does not fit this host ({c.os}, {have}{torch})"
    else:
        head = f"no ZLUDA release fits this host ({c.os}, {have}{torch})"
    pool = selection.requested if c.release else selection.rejected
    by_need = blocked_needs(pool)
    lines = [f"needs {need}: {', '.join(ids)}" for (_, need), ids in list(by_need.items())[:_MAX_NEED_LINES]]
    if not lines:  # nothing for this OS is one step away: the first reasons, as releases gives them
        lines = [f"{r.release_id}/{r.asset_name}: {'; '.join(r.reasons)}" for r in pool
                 if not any(x.startswith("built for") for x in r.reasons)][:3]
    c_gfx = c.gfx or "your GPU"
    lines = [r.reason(c_gfx, c.hip) for r in selection.gpu_rules if c.hip] + lines
    message = head + (":\n  " + "\n  ".join(lines) if lines else "")
    if selection.instead is not None:
        instead = selection.instead
        message += f"\n  without {{opt:release}}: {instead.release.id}/{instead.asset.name} fits"
    ways = [f"for {c_gfx}: {r.fix}" for r in selection.gpu_rules if r.fix]
    hip_blocked = any(rej is r for rej, _ in selection.hip_blocked for r in pool)
    for route in found.routes if found is not None and hip_blocked else ():
        fits = _route_fits(resolution, route.gives, route.origin)
        ways.append(f"{route.how}: " + (f"fits {', '.join(fits)}" if fits else "fits none of these"))
    ways.extend(f"install {need}" for (kind, need) in by_need if kind == "cuda")
    ways.append(("or " if ways else "") + "{opt:zluda_dir DIR} with a ZLUDA you built yourself")
    if said_by is None:  # releases and doctor give the native wheels' own line beside this error
        from zluda_runner.release.native import native_wheels  # only when nothing fits

        native = native_wheels(resolution.manifest, c.gfx, c.os)
        if native is not None and native.available:
            ways.append(f"or no ZLUDA: AMD's native ROCm wheels for {c_gfx} (`{native.install}`); "
                        "{cmd:releases} says how to compare them with ZLUDA")
    pointers = {"releases": "{cmd:releases} lists every release and why",
                "doctor": "{cmd:doctor} checks the rest of this host"}
    ways.append("; ".join(text for name, text in pointers.items() if name != said_by))
    return NothingFitsError(message, "\n  ".join(ways), selection=selection)


_CITED = re.compile(r" \[[^\[\]]*\]$")  # a reason's source: " [publisher: repo:path@sha, ...]"
_NEED_LABEL = re.compile(r"^(needs .+?, you have \S+) \(.*\)$")  # its requirement's own words after it


def brief_reason(reason: str) -> str:
    """A reason of :func:`_misfits` without its source and its requirement's label: ``needs ROCm/HIP 6 to
    7.x, you have 5.2`` (the whole reason is in ``--all`` and ``--json``)."""
    reason = _CITED.sub("", reason)
    need = _NEED_LABEL.match(reason)
    return need.group(1) if need else reason
