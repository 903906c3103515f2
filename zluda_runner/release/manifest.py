"""The release manifest: which ZLUDA builds exist, what they need and what they ship.

The data lives in ``manifests/zluda-releases.json`` (schema in ``manifests/README.md``).
:func:`load_manifest` reads a manifest file within bounds (a regular file, at most
:data:`MAX_MANIFEST_BYTES`, JSON nested at most :data:`MAX_JSON_DEPTH` deep) and
validates every field (:mod:`zluda_runner.release.validation`). :func:`load_current_manifest`
is what commands use: ``--manifest`` wins, else a newer copy fetched by
``zluda-run manifest update`` into the cache, else the packaged one.

Unknown facts stay unknown: ``"sha256": "unknown"`` becomes ``Asset.sha256 = None``
and every fact carries its provenance (:class:`~zluda_runner.release.model.Fact`).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from zluda_runner.core.envnames import MANIFEST_ENV
from zluda_runner.core.errors import ManifestError
from zluda_runner.core.fsutil import FileTooLargeError, NotRegularFileError, read_regular
from zluda_runner.core.paths import CachePaths, manifests_dir
from zluda_runner.release.model import (
    ARCHES,
    CHANNELS,
    FACT_KINDS,
    OSES,
    SCHEMA_VERSION,
    UNKNOWN,
    Asset,
    ComputeCapability,
    Fact,
    GpuHipRule,
    HipRequirement,
    Launcher,
    Manifest,
    Release,
    ReleaseFile,
    Source,
    parse_version,
    version_at_least,
    version_at_most,
)
from zluda_runner.release.validation import parse_manifest

__all__ = [
    "ARCHES",
    "CHANNELS",
    "FACT_KINDS",
    "MANIFEST_FILE",
    "MAX_JSON_DEPTH",
    "MAX_MANIFEST_BYTES",
    "OSES",
    "SCHEMA_VERSION",
    "UNKNOWN",
    "Asset",
    "ComputeCapability",
    "Fact",
    "GpuHipRule",
    "HipRequirement",
    "Launcher",
    "Manifest",
    "Release",
    "ReleaseFile",
    "Source",
    "cached_manifest_path",
    "decode_manifest_bytes",
    "default_manifest_path",
    "load_current_manifest",
    "load_manifest",
    "parse_manifest",
    "parse_version",
    "read_bounded",
    "resolve_release_root",
    "version_at_least",
    "version_at_most",
]

MANIFEST_FILE = "zluda-releases.json"
MAX_MANIFEST_BYTES = 4 * 1024 * 1024  # the packaged manifest is ~150 KiB
MAX_JSON_DEPTH = 32  # the schema nests 7 deep

_HINT = f"check {{opt:manifest}} / {MANIFEST_ENV}, or leave them unset to use the packaged manifest"


def default_manifest_path() -> Path:
    return manifests_dir() / MANIFEST_FILE


def cached_manifest_path(cache_dir: Path) -> Path:
    """Where ``zluda-run manifest update`` keeps the newer manifest it fetched."""
    return CachePaths(cache_dir).manifest_dir / MANIFEST_FILE


# --------------------------------------------------------------------------- bounded reading


def read_bounded(path: Path, limit: int = MAX_MANIFEST_BYTES, what: str = "manifest") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (core/fsutil's ``read_regular``), else
    ManifestError. A FIFO, a device (``/dev/zero``), a folder or a socket is refused unread, so nothing
    blocks or reads forever."""
    try:
        return read_regular(path, limit)
    except FileNotFoundError:
        raise ManifestError(f"{what} not found: {path}", hint=_HINT) from None
    except NotRegularFileError as exc:
        hint = "point {opt:manifest} at a JSON file; pipes, devices and folders are not read"
        raise ManifestError(f"{what} {path} cannot be read: {exc.strerror}", hint=hint) from None
    except FileTooLargeError as exc:
        held = f"is {exc.size} bytes" if exc.size is not None else "grew while being read"
        raise ManifestError(f"{what} {path} {held}, more than the {limit} a {what} may have",
                            hint="is it really a ZLUDA release manifest?") from None
    except OSError as exc:
        raise ManifestError(f"cannot read {what} {path}: {exc.strerror or exc}", hint=_HINT) from None


_STRUCTURE_RE = re.compile(r'[\[\]{}"\\]')


def json_depth_exceeds(text: str, limit: int) -> bool:
    """True when arrays/objects nest deeper than ``limit`` (checked before ``json.loads`` recurses)."""
    depth = 0
    in_string = False
    escaped_at = -1
    for m in _STRUCTURE_RE.finditer(text):
        ch, pos = m.group(), m.start()
        if in_string:
            if ch == "\\" and escaped_at != pos:
                escaped_at = pos + 1
            elif ch == '"' and escaped_at != pos:
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def decode_manifest_bytes(data: bytes, source: str, limit: int = MAX_MANIFEST_BYTES) -> Any:
    """Bytes -> JSON value, bounded in size and nesting; ManifestError names the problem."""
    if len(data) > limit:
        raise ManifestError(
            f"manifest {source} is {len(data)} bytes, more than the {limit} a manifest may have",
            hint="is it really a ZLUDA release manifest?",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(
            f"manifest {source} is not UTF-8 text (byte {exc.start})", hint="is it a JSON file?"
        ) from None
    if json_depth_exceeds(text, MAX_JSON_DEPTH):
        raise ManifestError(
            f"manifest {source} nests arrays/objects more than {MAX_JSON_DEPTH} deep",
            hint="a release manifest nests 7 deep; this file is not one",
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(
            f"manifest {source} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            hint="fix the JSON syntax (a trailing comma or a missing quote?)",
        ) from None
    except ValueError as exc:  # a number of more than 4300 digits (int max str digits) is no JSONDecodeError
        raise ManifestError(
            f"manifest {source} is not a release manifest: {str(exc).split(';')[0]}",
            hint="a manifest's numbers are small whole numbers (versions, sizes in bytes)",
        ) from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise ManifestError(f"manifest {source} nests too deep", hint="this file is not a manifest") from None


# --------------------------------------------------------------------------- loading


# what each regular manifest file held when it was read, by its identity: one read per file per process
_READ: dict[tuple[str, int, int, int, int], Manifest] = {}


def load_manifest(path: Path | None = None) -> Manifest:
    """Load and validate a manifest; ``None`` means the packaged ``manifests/zluda-releases.json``. A
    regular file is read once per process while it is unchanged (same inode, size, modification and change
    times): every stage of one command asks for it, one read answers them all."""
    target = Path(path) if path is not None else default_manifest_path()
    try:
        st = os.stat(target)
        key = (os.path.abspath(target), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        st, key = None, None
    if key is not None and key in _READ:
        return _READ[key]
    manifest = parse_manifest(decode_manifest_bytes(read_bounded(target), str(target)), source=str(target))
    if key is not None and st is not None and stat.S_ISREG(st.st_mode):
        _READ[key] = manifest
    return manifest


def load_current_manifest(explicit: Path | None = None, cache_dir: Path | None = None) -> Manifest:
    """The manifest a command should use: ``explicit`` (``--manifest``) wins; else the copy that
    ``zluda-run manifest update`` left in ``cache_dir`` when it is valid and newer than the
    packaged one; else the packaged one. A broken cached copy is ignored, never fatal.
    """
    if explicit is not None:
        return load_manifest(explicit)
    packaged = load_manifest()
    if cache_dir is None:
        return packaged
    cached_path = cached_manifest_path(cache_dir)
    if not cached_path.is_file():
        return packaged
    try:
        cached = load_manifest(cached_path)
    except ManifestError:
        return packaged
    if int(cached.manifest_version) > int(packaged.manifest_version):
        return cached
    return packaged


#: the folder of the 32-bit builds in a Windows release since v7 (``32/nvcuda.dll``): never the release root
_32BIT_DIR = "32"


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
            if _32BIT_DIR in hit.relative_to(unpacked).parts[:-1]:
                continue  # zluda/32/nvcuda.dll sorts before zluda/nvcuda.dll: a 32-bit build, never the root
            return hit.parent
    return unpacked


def _holds_files(folder: Path, asset: Asset) -> bool:
    if not asset.files:
        return any(folder.iterdir())
    return any((folder / f.path).exists() or (folder / f.path).is_symlink() for f in asset.files)
