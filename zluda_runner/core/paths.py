"""Where things live: the cache, the packaged manifests and shim sources."""

from __future__ import annotations

import os
import sys
from pathlib import Path

CACHE_ENV = "ZLUDA_RUNNER_CACHE"
MANIFEST_ENV = "ZLUDA_RUNNER_MANIFEST"
MIRROR_ENV = "ZLUDA_RUNNER_MIRROR"

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def default_cache_dir() -> Path:
    """``$ZLUDA_RUNNER_CACHE``, else the platform's user cache folder."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "zluda-runner" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "zluda-runner"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "zluda-runner"


def _data_dir(name: str) -> Path:
    """A top-level data folder: inside the wheel (``_data/``) or the source checkout."""
    packaged = _PACKAGE_DIR / "_data" / name
    if packaged.is_dir():
        return packaged
    return _PACKAGE_DIR.parent / name


def manifests_dir() -> Path:
    return _data_dir("manifests")


def shims_dir() -> Path:
    return _data_dir("shims")
