"""The release manifest: which ZLUDA builds exist, what they need and what they ship.

The data lives in ``manifests/zluda-releases.json`` (schema in ``manifests/README.md``).
:func:`load_manifest` reads it and validates every field by hand, so a broken
manifest is rejected with a message that names the release and the field
(``release 'fork-3.9.5' asset 'X.zip': field 'sha256' must be ...``).

Unknown facts stay unknown: ``"sha256": "unknown"`` becomes ``Asset.sha256 =
None``; a HIP requirement may have ``confidence: "unknown"``; ``archive_root``
may be ``null`` (layout not known, see :func:`resolve_release_root`).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from zluda_runner.core.errors import ManifestError
from zluda_runner.core.families import FAMILIES, parse_library_name
from zluda_runner.core.paths import MANIFEST_ENV, manifests_dir
from zluda_runner.core.serial import JsonMixin

SCHEMA_VERSION = 1
MANIFEST_FILE = "zluda-releases.json"

OSES = ("linux", "windows")
ARCHES = ("x86_64",)
FORMATS = ("zip", "tar.gz")
FLAVOURS = ("upstream", "fork")
CHANNELS = ("stable", "nightly")
HIP_KINDS = ("sdk", "runtime", "driver", "unknown")
CONFIDENCES = ("documented", "reported", "inferred", "unknown")
LAUNCHER_KINDS = ("injector", "ld_audit", "redirect_dll", "tracer_dir", "launcher")
UNKNOWN = "unknown"

_SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_VERSION_RE = re.compile(r"^\d+(\.\d+)*$")
_DATE_RE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
_ENV_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


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


# --------------------------------------------------------------------------- model


@dataclass
class HipRequirement(JsonMixin):
    """Which HIP/ROCm an asset needs. Bounds are inclusive at their own precision ("6" = any 6.x).

    ``kind``: ``sdk`` (Windows HIP SDK), ``runtime`` (ROCm on Linux), ``driver`` (the AMD
    driver's own HIP runtime is enough: any HIP SDK version, or none, is fine), ``unknown``.
    """

    kind: str
    min: str | None = None
    max: str | None = None
    label: str = ""
    confidence: str = UNKNOWN

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
    """

    path: str
    family: str
    cuda_major: int | None
    load_names: list[str]
    needs_env: dict[str, str] = field(default_factory=dict)
    original_saved_as: str | None = None
    requires: list[str] = field(default_factory=list)
    optional: bool = False
    notes: list[str] = field(default_factory=list)


@dataclass
class Launcher(JsonMixin):
    """A launch means a release ships: ``zluda.exe`` (injector), ``zluda_ld`` (LD_AUDIT), ``trace/``."""

    name: str
    kind: str
    path: str


@dataclass
class Asset(JsonMixin):
    """One downloadable archive of a release. ``sha256 is None`` means the hash is not known."""

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
    name_confirmed: bool = True
    files_verified: bool = True
    files: list[ReleaseFile] = field(default_factory=list)
    launchers: list[Launcher] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def hash_known(self) -> bool:
        return self.sha256 is not None

    def files_for(self, family: str) -> list[ReleaseFile]:
        return [f for f in self.files if f.family == family]

    def serves_cuda(self, major: int) -> bool:
        return major in self.cuda_majors


@dataclass
class Release(JsonMixin):
    """A ZLUDA release: ``id`` is stable and unique ("upstream-v6", "fork-3.9.5")."""

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
    sources: list[str] = field(default_factory=list)

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


@dataclass
class Manifest(JsonMixin):
    schema_version: int
    releases: list[Release]
    manifest_version: int | str = 0
    updated: str | None = None
    notes: list[str] = field(default_factory=list)
    source: str | None = None  # where it was loaded from

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
        close = difflib.get_close_matches(wanted, names, n=3, cutoff=0.4)
        hint = ("did you mean: " + ", ".join(close) + "? ") if close else ""
        hint += "known releases: " + ", ".join(r.id for r in self.releases) + " (see `zluda-run releases`)"
        raise ManifestError(f"no release '{key}' in the manifest", hint=hint)

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.releases]


# --------------------------------------------------------------------------- validation


class _Checker:
    """Reads one JSON object, remembering where it is for error messages."""

    def __init__(self, data: Any, where: str, source: str) -> None:
        self.where = where
        self.source = source
        if not isinstance(data, dict):
            self.fail(None, f"must be a JSON object, got {_kind(data)}")
        self.data: dict[str, Any] = data
        self.seen: set[str] = set()

    def fail(self, name: str | None, problem: str) -> None:
        place = f"{self.where}: field '{name}'" if name else self.where
        raise ManifestError(
            f"invalid manifest {self.source}: {place} {problem}",
            hint=f"fix that field in {self.source}, or drop --manifest / {MANIFEST_ENV} to use the packaged "
            "manifest (schema: manifests/README.md)",
        )

    def get(self, name: str, *, required: bool = True, default: Any = None) -> Any:
        self.seen.add(name)
        if name not in self.data:
            if required:
                self.fail(name, "is missing")
            return default
        return self.data[name]

    def string(self, name: str, *, required: bool = True, pattern: re.Pattern[str] | None = None,
               choices: tuple[str, ...] | None = None, nullable: bool = False, default: str | None = None
               ) -> Any:
        if not required and name not in self.data:
            self.seen.add(name)
            return default
        value = self.get(name, required=required, default=default)
        if value is None and nullable:
            return value
        if not isinstance(value, str) or not value.strip():
            self.fail(name, f"must be a non-empty string, got {_kind(value)}")
        if choices is not None and value not in choices:
            self.fail(name, f"must be one of {', '.join(choices)} (got {value!r})")
        if pattern is not None and not pattern.match(value):
            self.fail(name, f"is malformed: {value!r}")
        return value

    def boolean(self, name: str, default: bool) -> bool:
        value = self.get(name, required=False, default=default)
        if not isinstance(value, bool):
            self.fail(name, f"must be true or false, got {_kind(value)}")
        return value

    def strings(self, name: str, *, required: bool = False, nonempty: bool = False) -> list[str]:
        value = self.get(name, required=required, default=[])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(name, "must be a list of non-empty strings")
        if nonempty and not value:
            self.fail(name, "must not be empty")
        return list(value)

    def objects(self, name: str, *, nonempty: bool) -> list[Any]:
        value = self.get(name, required=nonempty, default=[])
        if not isinstance(value, list):
            self.fail(name, f"must be a list, got {_kind(value)}")
        if nonempty and not value:
            self.fail(name, "must not be empty")
        return value

    def done(self) -> None:
        extra = sorted(set(self.data) - self.seen)
        if extra:
            self.fail(extra[0], "is not part of the schema (a typo?)")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def _safe_relative(c: _Checker, name: str, value: str) -> None:
    if "\\" in value:
        c.fail(name, f"must use '/' separators: {value!r}")
    pure = PurePosixPath(value)
    if pure.is_absolute() or ".." in pure.parts or re.match(r"^[A-Za-z]:", value):
        c.fail(name, f"must be a relative path inside the release: {value!r}")


def _check_version_text(c: _Checker, name: str, value: str | None) -> None:
    if value is not None and not _VERSION_RE.match(value):
        c.fail(name, f"must be a version like 6 or 6.2, got {value!r}")


def _parse_hip(data: Any, where: str, source: str) -> HipRequirement:
    c = _Checker(data, f"{where} hip", source)
    req = HipRequirement(
        kind=c.string("kind", choices=HIP_KINDS),
        min=c.string("min", required=False, nullable=True),
        max=c.string("max", required=False, nullable=True),
        label=c.string("label", required=False, default="") or "",
        confidence=c.string("confidence", required=False, choices=CONFIDENCES, default=UNKNOWN) or UNKNOWN,
    )
    _check_version_text(c, "min", req.min)
    _check_version_text(c, "max", req.max)
    if req.min and req.max:
        lo, hi = parse_version(req.min), parse_version(req.max)
        if not version_at_most(lo, hi):
            c.fail("min", f"{req.min} is above max {req.max}")
    if req.kind == "driver" and (req.min or req.max):
        c.fail("kind", "'driver' takes no min/max (the driver brings its own HIP runtime)")
    c.done()
    return req


def _parse_file(data: Any, where: str, asset_os: str, source: str) -> ReleaseFile:
    c = _Checker(data, where, source)
    path = c.string("path")
    _safe_relative(c, "path", path)
    family = c.string("family")
    if family not in FAMILIES:
        c.fail("family", f"is not a known library family: {family!r} (known: {', '.join(FAMILIES)})")
    cuda_major = c.get("cuda_major")
    if cuda_major is not None and (
        not isinstance(cuda_major, int) or isinstance(cuda_major, bool) or not 1 <= cuda_major <= 99
    ):
        c.fail("cuda_major", f"must be a CUDA major number or null, got {cuda_major!r}")
    load_names = c.strings("load_names", required=True, nonempty=True)
    for name in load_names:
        if "/" in name or "\\" in name:
            c.fail("load_names", f"entries are file names, not paths: {name!r}")
        parsed = parse_library_name(name)
        if parsed is None:
            continue
        if parsed.os != asset_os:
            c.fail("load_names", f"{name!r} is a {parsed.os} library name in a {asset_os} asset")
        if parsed.family != family:
            c.fail("load_names", f"{name!r} is a {parsed.family} library, but the file's family is {family}")
    env = c.get("needs_env", required=False, default={})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and _ENV_RE.match(k) and isinstance(v, str) for k, v in env.items()
    ):
        c.fail("needs_env", "must map environment variable names (A-Z, 0-9, _) to descriptions")
    saved = c.string("original_saved_as", required=False, nullable=True)
    if saved is not None and ("/" in saved or "\\" in saved or saved in (".", "..")):
        c.fail("original_saved_as", f"must be a file name, not a path: {saved!r}")
    result = ReleaseFile(
        path=path,
        family=family,
        cuda_major=cuda_major,
        load_names=load_names,
        needs_env=dict(env),
        original_saved_as=saved,
        requires=c.strings("requires"),
        optional=c.boolean("optional", False),
        notes=c.strings("notes"),
    )
    c.done()
    return result


def _parse_launcher(data: Any, where: str, source: str) -> Launcher:
    c = _Checker(data, where, source)
    launcher = Launcher(
        name=c.string("name"), kind=c.string("kind", choices=LAUNCHER_KINDS), path=c.string("path")
    )
    _safe_relative(c, "path", launcher.path)
    c.done()
    return launcher


def _parse_asset(data: Any, where: str, release: Release, source: str) -> Asset:
    c = _Checker(data, where, source)
    name = c.string("name")
    c.where = f"{where} '{name}'"
    if "/" in name or "\\" in name:
        c.fail("name", f"must be a file name, not a path: {name!r}")
    url = c.string("url")
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.netloc:
        c.fail("url", f"must be an https:// URL (mirrors are set with ZLUDA_RUNNER_MIRROR), got {url!r}")
    if not parts.path.endswith("/" + name):
        c.fail("url", f"must end with the asset name {name!r}: {url!r}")
    if parts.netloc.lower() == "github.com":
        wanted = f"/{release.repo}/releases/download/{release.tag}/{name}"
        if parts.path.lower() != wanted.lower():
            c.fail("url", f"must be the release asset of {release.repo} tag {release.tag!r} "
                   f"(https://github.com{wanted}), got {url!r}")
    os_name = c.string("os", choices=OSES)
    arch = c.string("arch", choices=ARCHES)
    fmt = c.string("format", choices=FORMATS)
    if not name.lower().endswith("." + fmt):
        c.fail("format", f"is {fmt!r} but the asset name {name!r} does not end with .{fmt}")
    sha = c.get("sha256")
    if sha == UNKNOWN:
        sha = None
    elif not isinstance(sha, str) or not _SHA256_RE.match(sha):
        c.fail("sha256", f'must be 64 hex digits or "unknown", got {sha!r}')
    else:
        sha = sha.lower()
    size = c.get("size", required=False)
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size <= 0):
        c.fail("size", f"must be a positive number of bytes or null, got {size!r}")
    channel = c.string("channel", required=False, choices=CHANNELS, default="stable")
    hip = _parse_hip(c.get("hip"), c.where, source)
    if (hip.kind, os_name) in (("sdk", "linux"), ("runtime", "windows")):
        right = "runtime" if os_name == "linux" else "sdk"
        c.fail("hip", f"kind {hip.kind!r} does not exist on {os_name} (use {right!r}: the Windows HIP SDK "
               "is 'sdk', ROCm on Linux is 'runtime')")
    majors = c.get("cuda_majors")
    if (
        not isinstance(majors, list)
        or not all(isinstance(m, int) and not isinstance(m, bool) and 1 <= m <= 99 for m in majors)
        or len(set(majors)) != len(majors)
    ):
        c.fail("cuda_majors", f"must be a list of distinct CUDA major numbers, got {majors!r}")
    root = c.get("archive_root", required=False)
    if root is not None:
        if not isinstance(root, str):
            c.fail("archive_root", f"must be a folder name, \"\" (files on top) or null, got {_kind(root)}")
        if root:
            _safe_relative(c, "archive_root", root)
    files = [
        _parse_file(item, f"{c.where} file #{i}", os_name, source)
        for i, item in enumerate(c.objects("files", nonempty=False))
    ]
    seen_paths: set[str] = set()
    for f in files:
        if f.path in seen_paths:
            c.fail("files", f"lists {f.path!r} twice")
        seen_paths.add(f.path)
    launchers = [
        _parse_launcher(item, f"{c.where} launcher #{i}", source)
        for i, item in enumerate(c.objects("launchers", nonempty=False))
    ]
    asset = Asset(
        name=name,
        url=url,
        os=os_name,
        arch=arch,
        format=fmt,
        sha256=sha,
        size=size,
        channel=channel,
        hip=hip,
        cuda_majors=list(majors),
        archive_root=root,
        name_confirmed=c.boolean("name_confirmed", True),
        files_verified=c.boolean("files_verified", True),
        files=files,
        launchers=launchers,
        notes=c.strings("notes"),
    )
    c.done()
    return asset


def _parse_release(data: Any, index: int, source: str) -> Release:
    c = _Checker(data, f"release #{index}", source)
    rid = c.string("id", pattern=_ID_RE)
    c.where = f"release '{rid}'"
    release = Release(
        id=rid,
        flavour=c.string("flavour", choices=FLAVOURS),
        version=c.string("version"),
        tag=c.string("tag"),
        assets=[],
        repo=c.string("repo", pattern=_REPO_RE),
        date=c.string("date", required=False, nullable=True, pattern=_DATE_RE),
        prerelease=c.boolean("prerelease", False),
        gpu_generations=c.strings("gpu_generations"),
        caveats=c.strings("caveats"),
        notes=c.strings("notes"),
        sources=c.strings("sources"),
    )
    if release.version != UNKNOWN and not _VERSION_RE.match(release.version):
        c.fail("version", f'must look like 3.9.5 or 6, or be "unknown": {release.version!r}')
    raw_assets = c.objects("assets", nonempty=True)
    names: set[str] = set()
    for i, item in enumerate(raw_assets):
        asset = _parse_asset(item, f"{c.where} asset #{i}", release, source)
        if asset.name in names:
            c.fail("assets", f"lists {asset.name!r} twice")
        names.add(asset.name)
        release.assets.append(asset)
    c.done()
    return release


def parse_manifest(data: Any, source: str = "<manifest>") -> Manifest:
    """Validate already-decoded JSON and build a :class:`Manifest` (ManifestError on any fault)."""
    c = _Checker(data, "top level", source)
    schema = c.get("schema_version")
    if schema != SCHEMA_VERSION or isinstance(schema, bool):
        c.fail("schema_version", f"must be {SCHEMA_VERSION} (the schema this program reads), got {schema!r}")
    mversion = c.get("manifest_version")
    if not isinstance(mversion, int | str) or isinstance(mversion, bool):
        c.fail("manifest_version", f"must be a number or a date string, got {_kind(mversion)}")
    raw = c.objects("releases", nonempty=True)
    releases = [_parse_release(item, i, source) for i, item in enumerate(raw)]
    seen: dict[str, str] = {}
    for r in releases:
        if r.id in seen:
            raise ManifestError(
                f"invalid manifest {source}: release '{r.id}': field 'id' is used by two releases",
                hint="every release id must be unique; rename one of them",
            )
        seen[r.id] = r.id
    tags = [(r.repo, r.tag) for r in releases]
    for r in releases:
        if tags.count((r.repo, r.tag)) > 1:
            raise ManifestError(
                f"invalid manifest {source}: release '{r.id}': field 'tag' {r.tag!r} of {r.repo} "
                "appears in two releases",
                hint="one release per tag; put all its assets under one entry",
            )
    manifest = Manifest(
        schema_version=schema,
        releases=releases,
        manifest_version=mversion,
        updated=c.string("updated", required=False, nullable=True),
        notes=c.strings("notes"),
        source=source,
    )
    c.done()
    return manifest


def default_manifest_path() -> Path:
    return manifests_dir() / MANIFEST_FILE


def load_manifest(path: Path | None = None) -> Manifest:
    """Load and validate a manifest; ``None`` means the packaged ``manifests/zluda-releases.json``."""
    target = Path(path) if path is not None else default_manifest_path()
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(
            f"manifest not found: {target}",
            hint=f"check --manifest / {MANIFEST_ENV}, or leave them unset to use the packaged manifest",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(
            f"cannot read manifest {target}: {exc}", hint="is it a readable UTF-8 file?"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(
            f"manifest {target} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            hint="fix the JSON syntax (a trailing comma or a missing quote?)",
        ) from None
    return parse_manifest(data, source=str(target))


def resolve_release_root(unpacked: Path, asset: Asset) -> Path:
    """The folder of an unpacked archive that holds the release's files.

    Tolerant of layouts the manifest does not know (``archive_root`` null) or got wrong:
    the declared root if it exists, else a single top-level folder, else the folder that
    holds the first listed file, else ``unpacked`` itself.
    """
    if asset.archive_root is not None:
        declared = unpacked / asset.archive_root if asset.archive_root else unpacked
        if declared.is_dir() and _holds_files(declared, asset):
            return declared
    entries = [p for p in unpacked.iterdir() if not p.name.startswith(".")] if unpacked.is_dir() else []
    if _holds_files(unpacked, asset):
        return unpacked
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    for f in asset.files:
        name = PurePosixPath(f.path).name
        for hit in sorted(unpacked.rglob(name)):
            return hit.parent
    return unpacked


def _holds_files(folder: Path, asset: Asset) -> bool:
    if not asset.files:
        return any(folder.iterdir())
    return any((folder / f.path).exists() or (folder / f.path).is_symlink() for f in asset.files)
