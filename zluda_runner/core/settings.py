"""The one options record: :class:`Options`, what a caller of the public API may set (re-exported as
``zluda_runner.Options``; the CLI builds it too), and :class:`Settings`, the form the library's stages
take: the same fields (inherited, never listed twice) with the cache folder resolved, and what one
launch asks for."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.argcheck import check_fields
from zluda_runner.core.envnames import MANIFEST_ENV
from zluda_runner.core.paths import default_cache_dir


@dataclass(frozen=True)
class Options:
    """Everything a caller may set, once, for every call of the API (all keywords, all optional).

    Each field is checked when the record is made (a TypeError naming it, as for a call's argument): a
    path as ``str`` or ``Path`` (kept as a ``Path``; ``results_db`` and ``python`` as text), a switch as
    ``True``/``False``; an empty path or text is unset, as on the command line.

    Attributes:
        cache_dir: where releases, plans and the results store live (default: ``$ZLUDA_RUNNER_CACHE``,
            else the platform's user cache folder).
        zluda_dir: a ZLUDA folder to use as is (one you unpacked or built) instead of a release from
            the manifest.
        release: the manifest release to use (id, version or tag) instead of the one selected.
        manifest: a release manifest file to read instead of the packaged (or updated) one.
        python: the interpreter whose torch is the target (default: the one the command runs,
            else this one).
        trust_on_first_use: accept, and record, a release whose SHA-256 the manifest does not know.
        archive: a hand-downloaded release archive to install instead of downloading it.
        force: go on when the plan predicts the launch will fail (a fatal verdict).
        results_db: the results store: a SQLite file or a ``postgresql://`` URL (default: ``results.db``
            in the cache folder).
        record: keep probe and doctor results in the results store.
        defaults: apply the settings a ZLUDA launch needs (fused attention off where the release cannot
            run it, cuDNN off without a stand-in, ...), each listed with its reason in the plan.
        lock: a lock file written by ``find`` (``zluda.lock``): run its release, mechanism and settings,
            nothing chosen again; the host is checked against it first. Excludes ``zluda_dir``,
            ``release`` and ``archive``.
        monitor: the command line's ``--monitor`` (sample the GPU while the workload runs); from
            Python, pass ``on_telemetry=`` to :func:`run`, :func:`start`, :func:`verify_launch` or
            :func:`trace_launch` to hear the GPU trace.
    """

    cache_dir: Path | None = None
    zluda_dir: Path | None = None
    release: str | None = None
    manifest: Path | None = None
    python: str | None = None
    trust_on_first_use: bool = False
    archive: Path | None = None
    force: bool = False
    results_db: str | None = None
    record: bool = True
    defaults: bool = True
    monitor: bool = False
    lock: Path | None = None

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class Settings(Options):
    """What a call of the library was asked to do, for the stages (internal: callers use ``Options``):
    its options, the cache folder resolved (``$ZLUDA_RUNNER_CACHE``, else the user cache) and the
    manifest by ``$ZLUDA_RUNNER_MANIFEST`` when none is given, and what one launch asks for."""

    cache_dir: Path = field(default_factory=default_cache_dir)  # resolved: never None here
    verify_load: bool = False
    trace_out: Path | None = None
    # the ROCm folder / HIP SDK the run takes instead of the host's own pick (find's "other HIP" variant, a
    # lock's HIP): an input of the run's context (zluda_runner.conduct.context), never read from elsewhere
    hip: str | None = None

    def __post_init__(self) -> None:
        if self.cache_dir is None:  # unset in the Options it was made from
            object.__setattr__(self, "cache_dir", default_cache_dir())  # frozen: set once, here
        if self.manifest is None and os.environ.get(MANIFEST_ENV):
            object.__setattr__(self, "manifest", Path(os.environ[MANIFEST_ENV]))
        super().__post_init__()
