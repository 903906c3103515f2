"""Options shared by every command, gathered once by the CLI group."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.paths import MANIFEST_ENV, default_cache_dir


@dataclass
class Settings:
    """What the user said on the command line (or through the environment).

    Library users build one directly; the CLI fills it from the global options.
    """

    zluda_dir: Path | None = None
    release: str | None = None
    manifest: Path | None = None
    cache_dir: Path = field(default_factory=default_cache_dir)
    json: bool = False
    python: str | None = None
    force: bool = False
    trace: bool = False
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
            self.manifest = Path(os.environ[MANIFEST_ENV])
