"""Validate decoded manifest JSON field by field and build the model.

Every fault is a :class:`ManifestError` that names the release, the asset and the
field (``release 'fork-3.9.5' asset 'X.zip': field 'sha256' must be ...``). Unknown
fields are rejected everywhere (catches typos such as ``sha265``).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from zluda_runner.core.errors import ManifestError
from zluda_runner.core.families import FAMILIES, parse_library_name
from zluda_runner.release.checker import (
    DATE_RE,
    VERSION_RE,
    Checker,
    check_version_text,
    kind_of,
    parse_fact,
    parse_source,
)
from zluda_runner.release.model import (
    ARCHES,
    ASSET_FACTS,
    CHANNELS,
    FLAVOURS,
    FORMATS,
    HIP_KINDS,
    HIP_ORIGINS,
    LAUNCHER_KINDS,
    OLDEST_SCHEMA_VERSION,
    OSES,
    RELEASE_FACTS,
    RELEASE_OPTIONAL_FACTS,
    RULE_DEFAULTS,
    SCHEMA_ADDED,
    SCHEMA_VERSION,
    UNKNOWN,
    UNVERIFIED,
    Asset,
    ComputeCapability,
    Fact,
    GpuHipRule,
    HipRequirement,
    Launcher,
    Manifest,
    Release,
    ReleaseFile,
    Unimplemented,
    parse_version,
    version_at_most,
)
from zluda_runner.release.native import parse_native_rocm

_SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_ENV_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_COMMIT_RE = re.compile(r"^[0-9a-f]{7,40}$")
#: an asset's ``size`` bounds its download, so it is a real one: the cap fetch.MAX_DOWNLOAD_BYTES sets
#: when no size is known (a ZLUDA release archive is tens of MB)
MAX_ASSET_BYTES = 1 << 30


def _safe_relative(c: Checker, name: str, value: str) -> None:
    if "\\" in value:
        c.fail(name, f"must use '/' separators: {value!r}")
    pure = PurePosixPath(value)
    if pure.is_absolute() or ".." in pure.parts or re.match(r"^[A-Za-z]:", value):
        c.fail(name, f"must be a relative path inside the release: {value!r}")


# --------------------------------------------------------------------------- provenance


def parse_provenance(data: Any, where: str, source: str, required: tuple[str, ...],
                     optional: tuple[str, ...] = ()) -> dict[str, Fact]:
    c = Checker(data, f"{where} provenance", source)
    facts = {name: parse_fact(c.get(name), f"{where} provenance.{name}", source) for name in required}
    for name in optional:
        raw = c.get(name, required=False)
        if raw is not None:
            facts[name] = parse_fact(raw, f"{where} provenance.{name}", source)
    c.done()
    return facts


# --------------------------------------------------------------------------- parts


def _parse_hip(data: Any, where: str, source: str) -> HipRequirement:
    c = Checker(data, f"{where} hip", source)
    req = HipRequirement(
        kind=c.string("kind", choices=HIP_KINDS),
        min=c.string("min", required=False, nullable=True),
        max=c.string("max", required=False, nullable=True),
        label=c.string("label", required=False, default="") or "",
        torch_needs=c.string("torch_needs", required=False, default="") or "",
        driver_hip=c.string("driver_hip", required=False, nullable=True),
    )
    for key in ("min", "max", "driver_hip"):
        check_version_text(c, key, getattr(req, key))
    if req.driver_hip and req.kind != "driver":
        c.fail("driver_hip", "only a 'driver' requirement runs on the driver's HIP runtime")
    if req.min and req.max:
        lo, hi = parse_version(req.min), parse_version(req.max)
        if not version_at_most(lo, hi):
            c.fail("min", f"{req.min} is above max {req.max}")
    if req.kind == "driver" and (req.min or req.max):
        c.fail("kind", "'driver' takes no min/max (the driver brings its own HIP runtime)")
    c.done()
    return req


def _parse_file(data: Any, where: str, asset_os: str, source: str) -> ReleaseFile:
    c = Checker(data, where, source)
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
    majors = c.get("cuda_majors", required=False, default=[])
    if (not isinstance(majors, list) or len(set(majors)) != len(majors)
            or not all(isinstance(m, int) and not isinstance(m, bool) and 1 <= m <= 99 for m in majors)):
        c.fail("cuda_majors", f"must be a list of distinct CUDA major numbers, got {majors!r}")
    if majors and cuda_major not in majors:
        c.fail("cuda_majors", f"must include cuda_major {cuda_major!r}: it lists every major the file serves")
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
    stub = c.boolean("stub", False)
    stub_reason = c.string("stub_reason", required=stub, default="") or ""
    raw_stub_source = c.get("stub_source", required=stub)
    stub_source = parse_source(raw_stub_source, f"{where} stub_source", source) if stub else None
    if not stub and (stub_reason or raw_stub_source is not None):
        c.fail("stub", "stub_reason / stub_source are only for a file with \"stub\": true")
    hip_broken = c.strings("hip_broken")
    for version in hip_broken:
        check_version_text(c, "hip_broken", version)
    raw_broken_source = c.get("hip_broken_source", required=bool(hip_broken))
    if raw_broken_source is not None and not hip_broken:
        c.fail("hip_broken_source", "is only for a file with hip_broken versions")
    broken_source = (parse_source(raw_broken_source, f"{where} hip_broken_source", source)
                     if raw_broken_source is not None else None)
    result = ReleaseFile(
        path=path,
        family=family,
        cuda_major=cuda_major,
        load_names=load_names,
        needs_env=dict(env),
        original_saved_as=saved,
        requires=c.strings("requires"),
        optional=c.boolean("optional", False),
        stub=stub,
        stub_reason=stub_reason,
        stub_source=stub_source,
        notes=c.strings("notes"),
        cuda_majors=list(majors),
        hip_broken=hip_broken,
        hip_broken_source=broken_source,
    )
    c.done()
    return result


def _parse_launcher(data: Any, where: str, source: str) -> Launcher:
    c = Checker(data, where, source)
    launcher = Launcher(
        name=c.string("name"), kind=c.string("kind", choices=LAUNCHER_KINDS), path=c.string("path")
    )
    _safe_relative(c, "path", launcher.path)
    c.done()
    return launcher


def _check_url(c: Checker, url: str, name: str, release: Release) -> None:
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


def _parse_asset(data: Any, where: str, release: Release, source: str) -> Asset:
    c = Checker(data, where, source)
    name = c.string("name")
    c.where = f"{where} '{name}'"
    if "/" in name or "\\" in name:
        c.fail("name", f"must be a file name, not a path: {name!r}")
    url = c.string("url")
    _check_url(c, url, name, release)
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
    if size is not None and size > MAX_ASSET_BYTES:  # it bounds the download: it must be a real size
        c.fail("size", f"must be at most {MAX_ASSET_BYTES} bytes (no ZLUDA release archive comes near), "
               f"got {size}")
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
            c.fail("archive_root", f"must be a folder name, \"\" (files on top) or null, got {kind_of(root)}")
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
    other = c.strings("other_files")
    for path in other:
        _safe_relative(c, "other_files", path)
    launchers = [
        _parse_launcher(item, f"{c.where} launcher #{i}", source)
        for i, item in enumerate(c.objects("launchers", nonempty=False))
    ]
    provenance = parse_provenance(c.get("provenance"), c.where, source, ASSET_FACTS)
    if sha is None and provenance["sha256"].kind != UNVERIFIED:
        # an entry copied from a pinned one with its hash blanked: the hash is what is unknown
        provenance["sha256"] = Fact(kind=UNVERIFIED, note="sha256 is \"unknown\" in this manifest")
    if sha is not None and provenance["sha256"].kind == UNVERIFIED:
        c.fail("provenance", "a pinned sha256 needs a source (whoever pins it)")
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
        files=files,
        other_files=other,
        launchers=launchers,
        notes=c.strings("notes"),
        provenance=provenance,
    )
    c.done()
    return asset


def _parse_release(data: Any, index: int, source: str) -> Release:
    c = Checker(data, f"release #{index}", source)
    rid = c.string("id", pattern=_ID_RE)
    c.where = f"release '{rid}'"
    release = Release(
        id=rid,
        flavour=c.string("flavour", choices=FLAVOURS),
        version=c.string("version"),
        tag=c.string("tag"),
        assets=[],
        repo=c.string("repo", pattern=_REPO_RE),
        date=c.string("date", required=False, nullable=True, pattern=DATE_RE),
        prerelease=c.boolean("prerelease", False),
        gpu_generations=c.strings("gpu_generations"),
        caveats=c.strings("caveats"),
        notes=c.strings("notes"),
    )
    if release.version != UNKNOWN and not VERSION_RE.match(release.version):
        c.fail("version", f'must look like 3.9.5 or 6, or be "unknown": {release.version!r}')
    release.commit = c.string("commit", required=False, nullable=True)
    if release.commit is not None and not _COMMIT_RE.match(release.commit):
        c.fail("commit", f"must be a git commit (7 to 40 lower-case hex digits), got {release.commit!r}")
    raw_cc = c.get("compute_capability", required=False)
    if raw_cc is not None:
        release.compute_capability = _parse_compute_capability(raw_cc, c.where, source)
    raw_gaps = c.get("unimplemented", required=False)
    if raw_gaps is not None:
        release.unimplemented = _parse_unimplemented(raw_gaps, c.where, source)
    release.provenance = parse_provenance(c.get("provenance"), c.where, source, RELEASE_FACTS,
                                          RELEASE_OPTIONAL_FACTS)
    if release.commit is not None and "commit" not in release.provenance:
        c.fail("provenance.commit", "is missing: a release's commit needs a source")
    if release.commit is None and "commit" in release.provenance:
        c.fail("commit", "is missing: provenance.commit sources a commit the release does not state")
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


def _parse_compute_capability(data: Any, where: str, source: str) -> ComputeCapability:
    c = Checker(data, f"{where} compute_capability", source)
    parts = []
    for name in ("major", "minor"):
        value = c.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 99:
            c.fail(name, f"must be a whole number from 0 to 99, got {value!r}")
        parts.append(value)
    env = c.string("override_env", required=False, default="") or ""
    if env and not _ENV_RE.match(env):
        c.fail("override_env", f"must be an environment variable name (A-Z, 0-9, _), got {env!r}")
    fact = parse_fact(c.get("source"), f"{where} compute_capability source", source)
    if fact.kind == UNVERIFIED:
        c.fail("source", "a compute capability is recorded only with a source; leave the field out when "
               "it is not known")
    c.done()
    return ComputeCapability(major=parts[0], minor=parts[1], override_env=env, source=fact)


MAX_UNIMPLEMENTED = 512
_CUDA_FUNCTION_RE = re.compile(r"^cu[A-Za-z0-9_]{1,80}$")


def _parse_unimplemented(data: Any, where: str, source: str) -> Unimplemented:
    c = Checker(data, f"{where} unimplemented", source)
    names = c.strings("functions", required=True, nonempty=True)
    if len(names) > MAX_UNIMPLEMENTED:
        c.fail("functions", f"must list 1 to {MAX_UNIMPLEMENTED} CUDA function names, got {len(names)}")
    bad = [n for n in names if not _CUDA_FUNCTION_RE.match(n)]
    if bad:
        c.fail("functions", f"must be CUDA function names (cuMemAllocHost, cublasSgemv_v2 ...), "
               f"got {bad[0]!r}")
    fact = parse_fact(c.get("source"), f"{where} unimplemented source", source)
    if fact.kind == UNVERIFIED:
        c.fail("source", "what a release does not implement is recorded only with a source; leave the field "
               "out when it is not known")
    c.done()
    return Unimplemented(functions=list(dict.fromkeys(names)), source=fact)


def _parse_gpu_rule(data: Any, index: int, source: str) -> GpuHipRule:
    c = Checker(data, f"gpu_hip_rules #{index}", source)
    gfx = c.gfx_names()
    rule = GpuHipRule(
        gfx=gfx,
        min=c.string("min", required=False, nullable=True),
        max=c.string("max", required=False, nullable=True),
        os=c.string("os", required=False, nullable=True, choices=OSES),
        label=c.string("label"),
        source=parse_fact(c.get("source"), f"gpu_hip_rules #{index} source", source),
        broken=c.strings("broken"),
        hip_from=c.string("hip_from", required=False, nullable=True, choices=HIP_ORIGINS),
        fix=c.string("fix", required=False, default="") or "",
        defaults=c.strings("defaults"),
        defaults_why=c.string("defaults_why", required=False, default="") or "",
    )
    for name in rule.defaults:
        if name not in RULE_DEFAULTS:
            c.fail("defaults", f"names no default a GPU rule can apply: {name!r} "
                   f"(known: {', '.join(RULE_DEFAULTS)})")
    if rule.defaults and not rule.defaults_why:
        c.fail("defaults_why", "is required with defaults: the plan says why they are applied")
    check_version_text(c, "min", rule.min)
    check_version_text(c, "max", rule.max)
    for version in rule.broken:
        check_version_text(c, "broken", version)
    if rule.min is None and rule.max is None and not rule.broken:
        c.fail("min", "or max or broken is required: a rule bounds the HIP version")
    c.done()
    return rule


#: the largest ``manifest_version`` accepted (2**31 - 1: room for a YYYYMMDDNN scheme). A manifest
#: above it (10**30 from a bad mirror) would be "newer" than every real one forever.
MAX_MANIFEST_VERSION = 2**31 - 1


def parse_manifest(data: Any, source: str = "<manifest>") -> Manifest:
    """Validate already-decoded JSON and build a :class:`Manifest` (ManifestError on any fault)."""
    c = Checker(data, "top level", source)
    schema = c.get("schema_version")
    _check_schema_version(c, schema)
    mversion = c.get("manifest_version")
    whole = isinstance(mversion, int) and not isinstance(mversion, bool)
    if not whole or not 1 <= mversion <= MAX_MANIFEST_VERSION:
        huge = whole and mversion.bit_length() > 64
        shown = f"a number of {mversion.bit_length()} bits" if huge else repr(mversion)
        c.fail("manifest_version", f"must be a whole number from 1 to {MAX_MANIFEST_VERSION} (it grows by "
               "one step per published manifest; a larger one would lock out every later update), "
               f"got {shown}")
    updated = c.string("updated", pattern=DATE_RE)
    raw = c.objects("releases", nonempty=True)
    releases = [_parse_release(item, i, source) for i, item in enumerate(raw)]
    seen: set[str] = set()
    for r in releases:
        if r.id in seen:
            raise ManifestError(
                f"invalid manifest {source}: release '{r.id}': field 'id' is used by two releases",
                hint="every release id must be unique; rename one of them",
            )
        seen.add(r.id)
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
        updated=updated,
        published_by=c.string("published_by"),
        notes=c.strings("notes"),
        gpu_hip_rules=[
            _parse_gpu_rule(item, i, source)
            for i, item in enumerate(c.objects("gpu_hip_rules", nonempty=False))
        ],
        source=source,
        update_url=c.string("update_url", required=False, nullable=True),
    )
    raw_native = c.get("native_rocm", required=False)
    if raw_native is not None:
        manifest.native_rocm = parse_native_rocm(raw_native, source)
    if manifest.update_url is not None:
        parts = urlsplit(manifest.update_url)
        if parts.scheme != "https" or not parts.netloc or parts.username or parts.password:
            c.fail("update_url", f"must be an https:// URL without credentials, got {manifest.update_url!r}")
    c.done()
    _check_schema_fields(manifest, source)
    return manifest


def _check_schema_version(c: Checker, schema: Any) -> None:
    """``schema_version``: one this program reads; one above them is a manifest for a newer zluda-runner."""
    whole = isinstance(schema, int) and not isinstance(schema, bool)
    if whole and schema > SCHEMA_VERSION:
        raise ManifestError(
            f"invalid manifest {c.source}: top level: field 'schema_version' is {schema}: it is written for "
            f"a newer zluda-runner (this one reads schema {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION})",
            hint="upgrade zluda-runner (pip install -U zluda-runner) to use it; the manifest in use stays as "
            "it was",
            details={"where": c.where, "field": "schema_version", "schema_version": schema,
                     "reads": [OLDEST_SCHEMA_VERSION, SCHEMA_VERSION]},
        )
    if not whole or schema < OLDEST_SCHEMA_VERSION:
        c.fail("schema_version", f"must be {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION} (the schemas this "
               f"program reads; it writes {SCHEMA_VERSION}), got {schema!r}")


def _check_schema_fields(manifest: Manifest, source: str) -> None:
    """A field newer than the manifest's own ``schema_version`` is an error naming it: what an older reader
    of that schema would say, so a manifest that passes here passes every reader of its schema."""
    present = [("top level", "native_rocm")] if manifest.native_rocm is not None else []
    present += [(f"release '{r.id}'", "unimplemented")
                for r in manifest.releases if r.unimplemented is not None]
    for where, name in present:
        added = min(v for v, names in SCHEMA_ADDED.items() if name in names)
        if manifest.schema_version < added:
            raise ManifestError(
                f"invalid manifest {source}: {where}: field '{name}' is part of schema {added}, but the "
                f"manifest says schema_version {manifest.schema_version}",
                hint=f"set schema_version to {added} (or drop the field): a reader of schema "
                f"{manifest.schema_version} rejects it as unknown",
                details={"where": where, "field": name, "schema_version": manifest.schema_version,
                         "added_in": added},
            )
