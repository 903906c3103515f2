"""The release manifest's data model: releases, assets, files, and where every fact comes from.

Every fact that drives a decision (an asset's name, hash, size, HIP requirement, CUDA
majors, file list and launchers; a release's date, pre-release flag and GPU generations)
carries a :class:`Fact`: the kind of evidence (:data:`FACT_KINDS`) and the sources that
give it (a repository path at a commit, or an issue URL). Selection prefers assets whose
facts rest on stronger evidence and says when a choice rests on a weak one.

Validation lives in :mod:`zluda_runner.release.validation`; loading in
:mod:`zluda_runner.release.manifest`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zluda_runner.core.errors import ManifestError
from zluda_runner.core.serial import JsonMixin

#: the manifest schema this program writes and reads; it also reads the older ones from OLDEST_SCHEMA_VERSION
#: on (a cached copy from an older ``manifest update``). 3 added the release's ``unimplemented`` and the
#: top level's ``native_rocm`` (both optional); a schema-2 reader rejects them as unknown fields, so a
#: manifest that has them must say 3: an older zluda-runner then says the schema is too new, not "a typo?".
SCHEMA_VERSION = 3
OLDEST_SCHEMA_VERSION = 2
#: the optional fields each schema added (a release's or the top level's): older schemas reject them
SCHEMA_ADDED = {3: ("unimplemented", "native_rocm")}

OSES = ("linux", "windows")
ARCHES = ("x86_64",)
FORMATS = ("zip", "tar.gz")
FLAVOURS = ("upstream", "fork")
# "stable": a release users are pointed at; "nightly": a hand-uploaded nightly build;
# "preview": an automatic CI preview (vN-preview.M). Only "stable" is chosen unless
# the user asks for --channel preview.
CHANNELS = ("stable", "nightly", "preview")
HIP_KINDS = ("sdk", "runtime", "driver", "unknown")
LAUNCHER_KINDS = ("injector", "ld_audit", "redirect_dll", "tracer_dir", "launcher")
UNKNOWN = "unknown"

# Evidence kinds, strongest first.
PUBLISHER = "publisher"
MAINTAINER = "maintainer statement"
PIN = "third-party pin"
USAGE = "third-party usage"
INFERRED = "inferred"
UNVERIFIED = "unverified"
FACT_KINDS = (PUBLISHER, MAINTAINER, PIN, USAGE, INFERRED, UNVERIFIED)
# Evidence tiers for ranking: what the publisher or its maintainer says (2), what other
# projects pin or use (1), what we derived or could not check (0).
_TIER = {PUBLISHER: 2, MAINTAINER: 2, PIN: 1, USAGE: 1, INFERRED: 0, UNVERIFIED: 0}

# The facts every asset / release must source.
ASSET_FACTS = ("name", "sha256", "size", "hip", "cuda_majors", "files", "launchers")
RELEASE_FACTS = ("date", "prerelease", "gpu_generations")
# Facts a release sources only when it states them.
RELEASE_OPTIONAL_FACTS = ("commit",)


# --------------------------------------------------------------------------- versions


def parse_version(text: str) -> tuple[int, ...]:
    """``"6.2"`` -> ``(6, 2)``; ``"6.x"`` / ``"6"`` -> ``(6,)``. ValueError when not a version."""
    cleaned = text.strip().lower().removeprefix("v")
    parts = cleaned.split(".")
    while parts and parts[-1] in ("x", "*"):
        parts.pop()
    if not parts or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(p) for p in parts)


def version_at_least(have: tuple[int, ...], bound: tuple[int, ...]) -> bool:
    """Compare on the common precision: ``(6,)`` is at least ``(6, 2)`` (as far as we can tell)."""
    k = min(len(have), len(bound))
    return have[:k] >= bound[:k]


def version_at_most(have: tuple[int, ...], bound: tuple[int, ...]) -> bool:
    """``(6, 4)`` is at most ``(6,)`` (any 6.x) and at most ``(6, 4)``, not at most ``(6, 2)``."""
    k = min(len(have), len(bound))
    return have[:k] <= bound[:k]


def _show_bound(text: str) -> str:
    return f"{text}.x" if "." not in text else text


# --------------------------------------------------------------------------- provenance


@dataclass
class Source(JsonMixin):
    """One piece of evidence: ``ref`` is ``owner/repo:path@<commit>`` (or ``@unverified``) or an URL."""

    kind: str
    ref: str
    says: str = ""


@dataclass
class Fact(JsonMixin):
    """Where one fact comes from. ``kind`` is the strongest kind among ``sources``.

    ``independent`` counts the unrelated projects that pin a hash or size (third-party pins).
    """

    kind: str
    sources: list[Source] = field(default_factory=list)
    independent: int | None = None
    note: str = ""

    @property
    def tier(self) -> int:
        return _TIER.get(self.kind, 0)

    @property
    def weak(self) -> bool:
        """Inferred, unverified, or a single third-party pin/usage."""
        if self.kind in (PIN, USAGE):
            return (self.independent or 1) < 2
        return self.tier == 0

    def label(self) -> str:
        """``publisher``, ``third-party pin (3 independent)``, ``unverified`` ..."""
        if self.kind == PIN and self.independent:
            return f"{PIN} ({self.independent} independent)"
        return self.kind

    def refs(self, limit: int = 3) -> str:
        shown = [s.ref for s in self.sources[:limit]]
        more = len(self.sources) - len(shown)
        return ", ".join(shown) + (f" (+{more} more)" if more > 0 else "")

    def cite(self) -> str:
        """``maintainer statement: https://github.com/.../issues/134, ...``"""
        refs = self.refs()
        return f"{self.label()}: {refs}" if refs else self.label()


def unverified_fact(note: str = "") -> Fact:
    return Fact(kind=UNVERIFIED, note=note)


# --------------------------------------------------------------------------- model


@dataclass
class HipRequirement(JsonMixin):
    """Which HIP/ROCm an asset needs. Bounds are inclusive at their own precision ("6" = any 6.x).

    ``kind``: ``sdk`` (Windows HIP SDK), ``runtime`` (ROCm on Linux), ``driver`` (the AMD
    driver's own HIP runtime is enough: any HIP SDK version, or none, is fine), ``unknown``.
    ``torch_needs``: what PyTorch additionally needs with this build (upstream v6 on Windows:
    AMD's TheRock SDK, not the official HIP SDK); empty when nothing beyond the bounds.
    ``driver_hip`` (``driver`` only): the HIP line of the driver's runtime the release loads (upstream v5
    on Windows links ``amdhip64_6``: ``"6"``), what the GPU x HIP rules judge it by; None: not known.
    """

    kind: str
    min: str | None = None
    max: str | None = None
    label: str = ""
    torch_needs: str = ""
    driver_hip: str | None = None

    @property
    def known(self) -> bool:
        return self.kind == "driver" or (self.kind != UNKNOWN and (self.min or self.max) is not None)

    def describe(self) -> str:
        if self.kind == "driver":
            return self.label or "the AMD driver's HIP runtime"
        prefix = "HIP SDK" if self.kind == "sdk" else "ROCm/HIP"
        if self.min and self.max:
            if self.min == self.max:
                return f"{prefix} {self.min}"
            return f"{prefix} {self.min} to {_show_bound(self.max)}"
        if self.min:
            return f"{prefix} {self.min} or newer"
        if self.max:
            return f"{prefix} {_show_bound(self.max)} or older"
        return self.label or f"{prefix} (version unknown)"

    def short(self) -> str:
        """A table-width form of :meth:`describe`."""
        if self.kind == "driver":
            return "AMD driver (no SDK)"
        if not self.known:
            return "unknown"
        return self.describe()

    def accepts(self, hip: str) -> bool | None:
        """True/False when the requirement is known; None when it cannot be judged."""
        if self.kind == "driver":
            return True
        if not self.known:
            return None
        have = parse_version(hip)
        if self.min and not version_at_least(have, parse_version(self.min)):
            return False
        return not (self.max and not version_at_most(have, parse_version(self.max)))


@dataclass
class ReleaseFile(JsonMixin):
    """One library inside a release and what it stands in for.

    ``path`` is relative to the release root (the archive minus ``archive_root``).
    ``cuda_major`` is the CUDA toolkit major of the library it replaces (cufft64_10.dll
    belongs to CUDA 11, so 11), None for the driver and NVML. ``load_names`` are the
    names it must be loaded/placed under (the fork's un-renamed ``cublas.dll`` ->
    ``cublas64_11.dll``). ``needs_env`` maps environment variables to what they must hold;
    ``original_saved_as`` is where the original NVIDIA library must be kept (fork nvrtc).

    ``cuda_majors`` lists every CUDA major whose libraries go by this file's name when there are more
    than ``cuda_major`` (v6 ``libcudnn.so.9`` and ``libcusparse.so.12`` serve CUDA 12 and 13: NVIDIA kept
    those names in CUDA 13); empty means just ``cuda_major``.

    ``hip_broken`` lists HIP versions the library is known not to work with (``"6.4"`` = any 6.4.x),
    sourced by ``hip_broken_source``.

    ``stub`` is true when the library only stands in by name: its functions are
    unimplemented and fail (upstream v6 cuFFT returns CUFFT_NOT_SUPPORTED everywhere).
    A plan that replaces a library with a stub must say that calls into it will fail;
    ``stub_reason`` says what fails and ``stub_source`` where that comes from.
    """

    path: str
    family: str
    cuda_major: int | None
    load_names: list[str]
    needs_env: dict[str, str] = field(default_factory=dict)
    original_saved_as: str | None = None
    requires: list[str] = field(default_factory=list)
    optional: bool = False
    stub: bool = False
    stub_reason: str = ""
    stub_source: Source | None = None
    notes: list[str] = field(default_factory=list)
    cuda_majors: list[int] = field(default_factory=list)
    hip_broken: list[str] = field(default_factory=list)
    hip_broken_source: Source | None = None

    def broken_on(self, hip: str) -> bool:
        """The library is known not to work with HIP ``hip`` (``hip_broken``, at each entry's precision: the
        fork nightly's cuDNN on HIP SDK 6.4, lshqqytiger/ZLUDA#116 and #125)."""
        try:
            have = parse_version(hip)
        except ValueError:
            return False
        return any(_same_line(have, parse_version(b)) for b in self.hip_broken)

    def serves(self, major: int) -> bool:
        """It stands in for the library of CUDA ``major`` (its ``cuda_major`` or one of ``cuda_majors``)."""
        return major == self.cuda_major or major in self.cuda_majors


@dataclass
class Launcher(JsonMixin):
    """A launch means a release ships: ``zluda.exe`` (injector), ``zluda_ld`` (LD_AUDIT), ``trace/``."""

    name: str
    kind: str
    path: str


@dataclass
class Asset(JsonMixin):
    """One downloadable archive of a release. ``sha256 is None`` means the hash is not known.

    ``provenance`` maps each of :data:`ASSET_FACTS` to its :class:`Fact`. ``other_files``
    names what the archive holds besides library stand-ins (tools such as ``ptxas``).
    """

    name: str
    url: str
    os: str
    arch: str
    format: str
    sha256: str | None
    size: int | None
    channel: str = "stable"
    hip: HipRequirement = field(default_factory=lambda: HipRequirement(UNKNOWN))
    cuda_majors: list[int] = field(default_factory=list)
    archive_root: str | None = None
    files: list[ReleaseFile] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)
    launchers: list[Launcher] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Fact] = field(default_factory=dict)

    @property
    def hash_known(self) -> bool:
        return self.sha256 is not None

    def fact(self, name: str) -> Fact:
        return self.provenance.get(name) or unverified_fact("no source recorded")

    @property
    def name_confirmed(self) -> bool:
        return self.fact("name").kind != UNVERIFIED

    @property
    def files_verified(self) -> bool:
        """The file list is stated by the publisher or a pin of the archive, not derived or guessed."""
        return self.fact("files").kind in (PUBLISHER, MAINTAINER, PIN)

    def files_for(self, family: str) -> list[ReleaseFile]:
        return [f for f in self.files if f.family == family]

    def serves_cuda(self, major: int) -> bool:
        return major in self.cuda_majors


@dataclass(frozen=True)
class ComputeCapability(JsonMixin):
    """The CUDA compute capability a release reports for every AMD GPU (``cudaGetDeviceProperties``'
    major.minor), which a workload that checks capability sees: 8.8 for upstream v6, 8.5 from
    v7-preview.8 (vosen/ZLUDA 6e7abfd2, #670). ``override_env`` is the variable the release reads
    to report another one (upstream: ``ZLUDA_CC=8.6``); empty when it has none."""

    major: int
    minor: int
    override_env: str = ""
    source: Fact = field(default_factory=unverified_fact)

    @property
    def text(self) -> str:
        """``"8.8"``"""
        return f"{self.major}.{self.minor}"

    def describe(self) -> str:
        """``compute capability 8.8 (override: ZLUDA_CC=MAJOR.MINOR)``"""
        extra = f" (override: {self.override_env}=MAJOR.MINOR)" if self.override_env else ""
        return f"compute capability {self.text}{extra}"


#: driver functions whose absence means pinned host memory fails (torch's ``cudaHostRegister`` path, a
#: ``cudaMallocHost``): what the ``pinned-memory-off`` default follows (zluda_runner.plan.defaults)
PINNED_MEMORY_FUNCTIONS = ("cuMemAllocHost", "cuMemHostRegister")


@dataclass(frozen=True)
class Unimplemented(JsonMixin):
    """CUDA functions a release exports but does not implement (they return an error such as
    ``CUDA_ERROR_NOT_SUPPORTED``), as its source shows them (upstream v6: ``zluda/src/lib.rs`` lists
    what is implemented; every other driver function is a stub)."""

    functions: list[str]
    source: Fact = field(default_factory=unverified_fact)

    def lacks(self, names: tuple[str, ...]) -> list[str]:
        """Those of ``names`` this release does not implement."""
        return [n for n in names if n in self.functions]


@dataclass
class Release(JsonMixin):
    """A ZLUDA release: ``id`` is stable and unique ("upstream-v6", "fork-3.9.5").

    ``prerelease`` is the flag its publisher puts on the GitHub release (the fork's CI marks
    every release a pre-release); which builds are offered by default is the assets' ``channel``.
    ``commit`` is the commit the tag points at (40 hex digits, or a shorter prefix when only that is
    known), sourced by ``provenance["commit"]``; ``compute_capability`` is the device identity the
    release reports (None: not recorded); ``unimplemented`` the functions it does not implement, with
    their source (None: not recorded).
    """

    id: str
    flavour: str
    version: str
    tag: str
    assets: list[Asset]
    repo: str = ""
    date: str | None = None
    prerelease: bool = False
    gpu_generations: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Fact] = field(default_factory=dict)
    commit: str | None = None
    compute_capability: ComputeCapability | None = None
    unimplemented: Unimplemented | None = None

    def fact(self, name: str) -> Fact:
        return self.provenance.get(name) or unverified_fact("no source recorded")

    def asset(self, name: str) -> Asset:
        for asset in self.assets:
            if asset.name == name:
                return asset
        raise ManifestError(
            f"release '{self.id}' has no asset named '{name}'",
            hint="assets: " + ", ".join(a.name for a in self.assets),
        )

    def assets_for(self, os: str) -> list[Asset]:
        return [a for a in self.assets if a.os == os]


#: where a host's HIP came from (zluda_runner.host.hipversion.HostHip.kind): AMD's ROCm folder, the
#: Windows HIP SDK, or a distribution's own packages (Debian's libamdhip64)
HIP_ORIGINS = ("rocm", "hip-sdk", "distribution")
#: the launch defaults a GPU rule can name (zluda_runner.plan.defaults): cuDNN off, torch's own convolutions
RULE_DEFAULTS = ("cudnn-off",)


@dataclass
class GpuHipRule(JsonMixin):
    """What HIP/ROCm a GPU generation needs, where a source says: newer gfx targets need a newer
    HIP (``min``), old ones run only with an older one in practice (``max``), and some HIP versions
    are known not to work for them (``broken``: ``"7"`` = any 7.x, ``"6.4"`` = any 6.4.x).

    ``hip_from`` limits the rule to HIP from one kind of installation (:data:`HIP_ORIGINS`:
    Debian's packaged ROCm 6.4 has no gfx12 kernels, AMD's ROCm 6.4 has them); None: any.
    """

    gfx: list[str]
    min: str | None = None
    max: str | None = None
    os: str | None = None
    label: str = ""
    source: Fact = field(default_factory=unverified_fact)
    broken: list[str] = field(default_factory=list)
    hip_from: str | None = None
    fix: str = ""
    # settings a launch applies for these GPUs on ``os`` whatever their HIP (:data:`RULE_DEFAULTS`), and why
    defaults: list[str] = field(default_factory=list)
    defaults_why: str = ""

    def applies(self, gfx: str, os: str | None, hip_from: str | None = None) -> bool:
        """The rule is about ``gfx`` on ``os`` with HIP from ``hip_from`` (None: not known, the rule
        is then taken to apply only when it names no origin)."""
        if gfx not in self.gfx or not (self.os is None or os is None or self.os == os):
            return False
        # a Windows HIP of no stated origin is the HIP SDK's: the one install the Windows finder reports
        origin = hip_from or ("hip-sdk" if (os or self.os) == "windows" else None)
        return self.hip_from is None or self.hip_from == origin

    def accepts(self, hip: str) -> bool:
        have = parse_version(hip)
        if self.min and not version_at_least(have, parse_version(self.min)):
            return False
        if self.max and not version_at_most(have, parse_version(self.max)):
            return False
        return not any(_same_line(have, parse_version(b)) for b in self.broken)

    def needs(self) -> str:
        """``HIP 7.2 or newer``, ``not HIP 7.x``, ``HIP 6.4 or newer, not from a distribution package``"""
        bits = []
        if self.min and self.max:
            bits.append(f"HIP {self.min} to {_show_bound(self.max)}")
        elif self.min:
            bits.append(f"HIP {self.min} or newer")
        elif self.max:
            bits.append(f"HIP {_show_bound(self.max)} or older")
        if self.broken:
            shown = ", ".join(_show_bound(b) for b in self.broken)
            bits.append(("a HIP other than " if not bits else "not ") + shown)
        text = ", ".join(bits)
        if self.hip_from:
            text += f" (for HIP from {_ORIGIN_WORDS.get(self.hip_from, self.hip_from)})"
        return text

    def reason(self, gfx: str, hip: str) -> str:
        """The rule's words for a host it rejects, with its source: what selection, doctor and plan say."""
        fix = f"; fix: {self.fix}" if self.fix else ""
        note = f": {self.source.note}" if self.source.note and not self.source.sources else ""
        cite = self.source.cite() + note
        return f"{gfx} with HIP {hip}: {self.label} (it needs {self.needs()}){fix} [{cite}]"


_ORIGIN_WORDS = {"rocm": "AMD's ROCm", "hip-sdk": "the Windows HIP SDK",
                 "distribution": "a distribution's packages"}


def _same_line(have: tuple[int, ...], bound: tuple[int, ...]) -> bool:
    """``(7, 1)`` is on the ``(7,)`` line; ``(6, 4, 2)`` on ``(6, 4)``; ``(6,)`` is not on ``(6, 4)``."""
    return len(have) >= len(bound) and have[: len(bound)] == bound


#: how far AMD has taken a GPU in TheRock, in ROCm/TheRock SUPPORTED_GPUS.md's words: a wheel is built and
#: published, it was sanity-tested, it is release-ready
NATIVE_SUPPORT = ("built", "sanity-tested", "release-ready")


@dataclass
class NativeWheelEntry(JsonMixin):
    """Whether AMD publishes native ROCm PyTorch wheels for ``gfx`` on ``os`` (None: either), where a source
    says: ``available`` True or False with the source, None where no source was found (the fact is then
    ``unverified`` and its note says what was looked at); ``support`` is :data:`NATIVE_SUPPORT`'s word."""

    gfx: list[str]
    os: str | None = None
    available: bool | None = None
    support: str = ""
    source: Fact = field(default_factory=unverified_fact)


@dataclass
class NativeRocm(JsonMixin):
    """AMD's own ROCm PyTorch, the alternative to ZLUDA the manifest knows: the ROCm release (its package
    number ``rocm``, the HIP line it ships ``hip``: ROCm 10.0.0 is HIP 7.x, and its ``date``), the torch
    wheel built for it and the index it is on, and per GPU and OS whether wheels are published."""

    rocm: str
    hip: str
    torch: str
    index_url: str
    date: str | None = None
    source: Fact = field(default_factory=unverified_fact)  # the ROCm release: number, date, its HIP
    torch_source: Fact = field(default_factory=unverified_fact)  # the torch wheel and its index
    recommended: Fact | None = None  # who recommends them to ZLUDA's users
    wheels: list[NativeWheelEntry] = field(default_factory=list)


@dataclass
class Manifest(JsonMixin):
    """The whole manifest. ``published_by`` says who wrote this copy; ``source`` where it was read;
    ``update_url`` where its publisher publishes newer ones (``zluda-run manifest update`` with no URL)."""

    schema_version: int
    releases: list[Release]
    manifest_version: int | str = 0
    updated: str | None = None
    published_by: str = ""
    notes: list[str] = field(default_factory=list)
    gpu_hip_rules: list[GpuHipRule] = field(default_factory=list)
    source: str | None = None  # where it was loaded from
    # where its publisher publishes newer copies (https): `manifest update` with no URL fetches from here
    update_url: str | None = None
    native_rocm: NativeRocm | None = None  # AMD's native ROCm PyTorch wheels, per GPU and OS

    def find(self, key: str) -> Release:
        """The release whose id, version or tag is ``key`` (ids win over versions over tags)."""
        wanted = key.strip()
        for attr in ("id", "version", "tag"):
            hits = [r for r in self.releases if getattr(r, attr) == wanted]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                raise ManifestError(
                    f"'{key}' matches several releases by {attr}: " + ", ".join(r.id for r in hits),
                    hint="name one by its id: " + ", ".join(r.id for r in hits),
                )
        # "v6" for "6", "3.9.5" for "fork-3.9.5" style conveniences
        loose = [r for r in self.releases if wanted.removeprefix("v") in (r.version, r.id.split("-", 1)[-1])]
        if len(loose) == 1:
            return loose[0]
        names = [r.id for r in self.releases] + [r.tag for r in self.releases]
        import difflib  # (only for a name that is no release: a start-up does not pay for it)

        close = difflib.get_close_matches(wanted, names, n=3, cutoff=0.4)
        hint = ("did you mean: " + ", ".join(close) + "? ") if close else ""
        hint += "known releases: " + ", ".join(r.id for r in self.releases) + " (see {cmd:releases})"
        raise ManifestError(f"no release '{key}' in the manifest", hint=hint)

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.releases]
