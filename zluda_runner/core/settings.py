"""The settings the library's stages take: built from the public API's ``Options`` by
``zluda_runner.api.options.to_settings`` (the one conversion; the CLI builds ``Options`` too)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.paths import MANIFEST_ENV, default_cache_dir


@dataclass(frozen=True)
class Settings:
    """What a call of the library was asked to do, for the stages (internal: callers use ``Options``).

    ``verify_load`` and ``trace_out`` are what one launch asks for; the rest is ``Options``.
    """

    zluda_dir: Path | None = None
    release: str | None = None
    manifest: Path | None = None
    cache_dir: Path = field(default_factory=default_cache_dir)
    python: str | None = None
    force: bool = False
    trace_out: Path | None = None
    verify_load: bool = False
    trust_on_first_use: bool = False  # accept (and record) a hash the manifest does not know
    archive: Path | None = None  # a hand-downloaded release archive to install instead of downloading
    record: bool = True  # keep probe/trace/ab/verify-load/doctor results in the results store
    results_db: str | None = None  # postgresql://... or a SQLite file (default: results.db in the cache)
    defaults: bool = True  # apply the settings ZLUDA needs (plan.defaults), each with its reason
    monitor: bool = False  # sample the GPU while the workload runs; one summary line at exit

    def __post_init__(self) -> None:
        if self.manifest is None and os.environ.get(MANIFEST_ENV):
            object.__setattr__(self, "manifest", Path(os.environ[MANIFEST_ENV]))  # frozen: set once, here
