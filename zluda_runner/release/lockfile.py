"""The lock file (``zluda.lock``): written through the project's one writer, read as data, never as code.

A lock is read like a manifest (:func:`zluda_runner.release.manifest.read_bounded`: a regular file of at
most :data:`MAX_LOCK_BYTES`, JSON nested at most :data:`MAX_DEPTH` deep), then validated field by field
with the manifest's :class:`~zluda_runner.release.checker.Checker`: every fault names the field
(``lock zluda.lock: release: field 'sha256' ...``) and unknown fields are refused.

The release's files are hashed where the run took them (:func:`hash_tree`): each regular file's SHA-256,
each link's target; :func:`changed_files` names what differs now.

A lock is shared through the results store: a ``find`` run keeps its lock's shared form
(:func:`shared_lock`: the release by manifest id and asset hash or by its files' hashes, without the
folders of the machine it was found on) as the text of its ``lock`` item, so that ``results export``
and ``import`` carry it and ``find --from`` reads it back (:func:`lock_from_shared`, validated like a
lock file).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn

from zluda_runner.core.errors import LockError, ManifestError
from zluda_runner.core.fsutil import atomic_write_text
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.checker import Checker, kind_of
from zluda_runner.release.hashio import hash_file
from zluda_runner.release.manifest import json_depth_exceeds, read_bounded

LOCK_SCHEMA = 2  # the lock file's own schema version (2: the HIP folder, the pinned and other-HIP variants)
READ_SCHEMAS = (1, 2)  # a schema-1 lock reads as one with no HIP folder
DEFAULT_LOCK = "zluda.lock"
Source = Literal["manifest", "dir", "archive"]
Stage = Literal["plan", "run"]
# the setting variants find tries, each a change of the defaults as applied (plan.defaults)
DEFAULTS, CUDNN_OFF_VARIANT, CUDNN_ON_VARIANT = "defaults", "cudnn-off", "cudnn-on"
PINNED_OFF_VARIANT = "pinned-memory-off"  # the start-up default of that name, where the release lacks it
OTHER_HIP_VARIANT = "other-hip"  # another ROCm folder / HIP SDK of the host (the lock's host.hip_path)
INJECTOR_VARIANT = "injector"  # Windows: started through the release's zluda.exe instead of placement
VARIANTS = (DEFAULTS, CUDNN_OFF_VARIANT, CUDNN_ON_VARIANT, PINNED_OFF_VARIANT, OTHER_HIP_VARIANT,
            INJECTOR_VARIANT)
MAX_LOCK_BYTES = 1024 * 1024
MAX_DEPTH = 8
MAX_FILES = 4096  # files of a release folder locked
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HINT = "a lock is written by {cmd:find}: write it again, or fix the field named"


class _LockChecker(Checker):
    """The manifest's field checker, its faults worded for a lock (:class:`LockError`)."""

    def fail(self, name: str | None, problem: str) -> NoReturn:
        place = f"{self.where}: field '{name}'" if name else self.where
        raise LockError(f"invalid lock {self.source}: {place} {problem}", hint=_HINT)

    def optional(self, name: str) -> str | None:
        return self.string(name, required=False, nullable=True)  # type: ignore[no-any-return]

    def integer(self, name: str) -> int:
        value = self.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(name, f"must be a whole number, got {kind_of(value)}")
        return value

    def text(self, name: str, *, required: bool = True) -> str:
        value = self.get(name, required=required, default="")
        if not isinstance(value, str) or len(value) > 4000:
            self.fail(name, f"must be a string of at most 4000 characters, got {kind_of(value)}")
        return value


@dataclass(frozen=True)
class LockedFile(JsonMixin):
    """One file of the locked release, relative to its root: its SHA-256, or the link it is."""

    path: str
    sha256: str | None = None
    link: str | None = None  # a symbolic link: its target, as written


@dataclass(frozen=True)
class LockedRelease(JsonMixin):
    """The release of the lock: the manifest id and asset (with its SHA-256) where it came from the
    manifest, the folder it was used from, and every file's SHA-256 there."""

    source: Source
    ref: str
    id: str | None = None
    asset: str | None = None
    asset_sha256: str | None = None
    root: str | None = None
    files: tuple[LockedFile, ...] = ()


@dataclass(frozen=True)
class LockedSetting(JsonMixin):
    """A setting of the locked launch: a default applied or off (and why not), or the variant's change."""

    name: str
    setting: str
    applied: bool
    why: str = ""


@dataclass(frozen=True)
class LockedHost(JsonMixin):
    """The host a lock was proven on (None: not known there)."""

    os: str
    gpu_name: str | None = None
    gfx: str | None = None
    driver: str | None = None
    hip_version: str | None = None
    hip_from: str | None = None  # where the HIP version was read, in words
    torch: str | None = None
    torch_cuda: str | None = None
    hip_path: str | None = None  # the ROCm folder / HIP SDK it was proven with (``--lock`` takes it again)

    def differences(self, other: LockedHost) -> list[tuple[str, str | None, str | None]]:
        """What differs on ``other`` from these facts: (field, locked, here) for the GPU, HIP (its version
        and folder), torch, OS."""
        fields = ("gfx", "gpu_name", "hip_version", "hip_path", "torch", "torch_cuda", "os")
        return [(name, getattr(self, name), getattr(other, name)) for name in fields
                if getattr(self, name) != getattr(other, name)]


@dataclass(frozen=True)
class LockedCriterion(JsonMixin):
    """One criterion of the locked candidate: "pass", "fail" or "not shown" (no GPU telemetry)."""

    name: str
    status: Literal["pass", "fail", "not shown"]
    summary: str
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class FailedCandidate(JsonMixin):
    candidate: str  # its label
    stage: Stage
    why: str


@dataclass(frozen=True)
class Lock(JsonMixin):
    """``zluda.lock``: the combination found, what it was proven on and with, and what was not proven."""

    release: LockedRelease
    variant: str
    mechanism: str  # how the release reaches the workload (the plan's bindings' mechanisms)
    settings: tuple[LockedSetting, ...]
    host: LockedHost
    workload: tuple[str, ...]
    criteria: tuple[LockedCriterion, ...]
    failed: tuple[FailedCandidate, ...] = ()
    proven_on_gpu: bool = False
    not_proven: tuple[str, ...] = ()  # what could not be proven here, in words
    env: Mapping[str, str] = field(default_factory=dict)  # the variant's change of the launch environment
    zluda_runner: str = ""  # the version that wrote it
    schema: int = LOCK_SCHEMA


def hash_tree(root: Path) -> tuple[LockedFile, ...]:
    """Every file under ``root`` (links not followed), sorted: a file's SHA-256, a link's target."""
    out: list[LockedFile] = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]):
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out.append(LockedFile(rel, link=os.readlink(path)))
            elif path.is_file():
                out.append(LockedFile(rel, sha256=hash_file(path)[0]))
            if len(out) > MAX_FILES:
                raise LockError(f"the release folder {root} holds more than {MAX_FILES} files: not locked",
                                hint="lock a ZLUDA release folder, not a folder above it")
    return tuple(out)


Change = Literal["missing", "sha256", "link"]


def changed_files(release: LockedRelease, root: Path) -> list[tuple[str, Change]]:
    """The locked files that differ under ``root`` now: (its path, what changed); empty: all as locked."""
    now = {f.path: f for f in hash_tree(root)} if root.is_dir() else {}
    changed: list[tuple[str, Change]] = []
    for locked in release.files:
        found = now.get(locked.path)
        if found is None:
            changed.append((str(root / locked.path), "missing"))
        elif found != locked:
            changed.append((str(root / locked.path), "sha256" if locked.sha256 else "link"))
    return changed


def lock_text(lock: Lock) -> str:
    return lock.to_json(indent=2) + "\n"


def write_lock(lock: Lock, path: Path) -> None:
    atomic_write_text(path, lock_text(lock))


def read_lock(path: Path) -> Lock:
    """The lock in ``path``, bounded and validated (:class:`LockError` names the field at fault)."""
    try:
        raw = read_bounded(path, MAX_LOCK_BYTES, what="lock")
    except ManifestError as exc:
        raise LockError(exc.raw_message, hint=_HINT) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise LockError(f"lock {path} is not UTF-8 text", hint=_HINT) from None
    if json_depth_exceeds(text, MAX_DEPTH):
        raise LockError(f"lock {path} nests deeper than {MAX_DEPTH} levels", hint=_HINT)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise LockError(f"lock {path} is not valid JSON: {exc}", hint=_HINT) from None
    return parse_lock(data, str(path))


def parse_lock(data: Any, source: str) -> Lock:
    c = _LockChecker(data, "the lock", source)
    schema = c.integer("schema")
    if schema not in READ_SCHEMAS:
        read = ", ".join(map(str, READ_SCHEMAS))
        c.fail("schema", f"is {schema}: this zluda-run reads lock schemas {read}")
    lock = Lock(
        release=_release(c.get("release"), source),
        variant=c.string("variant", choices=VARIANTS),
        mechanism=c.text("mechanism"),
        settings=tuple(_setting(s, i, source) for i, s in enumerate(c.objects("settings", nonempty=False))),
        host=_host(c.get("host"), source),
        workload=tuple(c.strings("workload", required=True, nonempty=True)),
        criteria=tuple(_criterion(s, i, source) for i, s in enumerate(c.objects("criteria", nonempty=True))),
        failed=tuple(_failed(s, i, source) for i, s in enumerate(c.objects("failed", nonempty=False))),
        proven_on_gpu=c.boolean("proven_on_gpu", False),
        not_proven=tuple(c.strings("not_proven")),
        env=_env(c, "env"),
        zluda_runner=c.text("zluda_runner", required=False),
        schema=schema,
    )
    c.done()
    return lock


def _env(c: _LockChecker, name: str) -> Mapping[str, str]:
    value = c.get(name, required=False, default={})
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and _ENV_RE.match(k) and isinstance(v, str) and len(v) <= 4000
            for k, v in value.items()):
        c.fail(name, "must be an object of variable names to strings")
    return dict(value)


def _release(data: Any, source: str) -> LockedRelease:
    c = _LockChecker(data, "release", source)
    files = []
    for i, item in enumerate(c.objects("files", nonempty=False)):
        f = _LockChecker(item, f"release: files[{i}]", source)
        path = f.string("path")
        if path.startswith("/") or ".." in path.split("/"):
            f.fail("path", f"must be relative, inside the release (got {path!r})")
        sha = f.string("sha256", required=False, nullable=True, pattern=_SHA256_RE)
        link = f.optional("link")
        if (sha is None) == (link is None):
            f.fail("sha256", "or 'link' must be given, not both")
        f.done()
        files.append(LockedFile(path, sha, link))
    release = LockedRelease(
        source=c.string("source", choices=("manifest", "dir", "archive")),
        ref=c.string("ref"),
        id=c.optional("id"),
        asset=c.optional("asset"),
        asset_sha256=c.string("asset_sha256", required=False, nullable=True, pattern=_SHA256_RE),
        root=c.optional("root"),
        files=tuple(files),
    )
    c.done()
    return release


def _setting(data: Any, index: int, source: str) -> LockedSetting:
    c = _LockChecker(data, f"settings[{index}]", source)
    setting = LockedSetting(c.string("name"), c.text("setting"), c.boolean("applied", False),
                            c.text("why", required=False))
    c.done()
    return setting


def _host(data: Any, source: str) -> LockedHost:
    c = _LockChecker(data, "host", source)
    host = LockedHost(os=c.string("os"), gpu_name=c.optional("gpu_name"), gfx=c.optional("gfx"),
                     driver=c.optional("driver"), hip_version=c.optional("hip_version"),
                     hip_from=c.optional("hip_from"), torch=c.optional("torch"),
                     torch_cuda=c.optional("torch_cuda"), hip_path=c.optional("hip_path"))
    c.done()
    return host


def _criterion(data: Any, index: int, source: str) -> LockedCriterion:
    c = _LockChecker(data, f"criteria[{index}]", source)
    criterion = LockedCriterion(c.string("name", choices=("ran", "right", "on the GPU", "stable", "speed")),
                                c.string("status", choices=("pass", "fail", "not shown")), c.text("summary"),
                                tuple(c.strings("evidence")))
    c.done()
    return criterion


def _failed(data: Any, index: int, source: str) -> FailedCandidate:
    c = _LockChecker(data, f"failed[{index}]", source)
    failed = FailedCandidate(c.string("candidate"), c.string("stage", choices=("plan", "run")), c.text("why"))
    c.done()
    return failed


MAX_SHARED = 4000  # the shared form is one item's text in the results store (results.schema.MAX_TEXT)
SHARED_ITEM = "lock"  # the item of a find run that holds it


def shared_lock(lock: Lock) -> str | None:
    """``lock`` as a find run keeps it in the results store: compact JSON of at most :data:`MAX_SHARED`
    characters, without this machine's folders and the failed candidates (the run's other items); the
    files' hashes kept where they fit (a folder's release is known by them; None: too large even so)."""
    rel = lock.release
    release = dataclasses.replace(rel, root=None,
                                  ref=rel.ref if rel.source == "manifest" else Path(rel.ref).name)
    slim = dataclasses.replace(lock, release=release, failed=())
    short = dataclasses.replace(slim, criteria=tuple(
        dataclasses.replace(c, summary=c.summary[:120], evidence=()) for c in slim.criteria))
    for form in (slim, short, dataclasses.replace(short, release=dataclasses.replace(release, files=()))):
        text = json.dumps(_without_nulls(form.to_dict()), separators=(",", ":"))
        if len(text) <= MAX_SHARED:
            return text
    return None


def _without_nulls(value: Any) -> Any:
    """``value`` without the null fields of its objects: shorter, and no field named as a login may be
    (``root``: the results store redacts the user's name wherever it stands as a word)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def lock_from_shared(text: str, source: str) -> Lock:
    """The lock a find run kept (:func:`shared_lock`), bounded and validated (:class:`LockError`)."""
    if len(text) > MAX_SHARED or json_depth_exceeds(text, MAX_DEPTH):
        raise LockError(f"the lock in {source} is larger or deeper than a shared lock may be", hint=_HINT)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise LockError(f"the lock in {source} is not valid JSON: {exc}", hint=_HINT) from None
    return parse_lock(data, source)
