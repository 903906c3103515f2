"""Where things live: the cache, the packaged manifests and shim sources."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from zluda_runner.core.envnames import CACHE_ENV


def real_path(path: str | os.PathLike[str]) -> str:
    """``path`` absolute, its links resolved (``os.path.realpath``), never an OSError: the one way a path
    of the target (torch/lib, the interpreter, a release file) is made canonical.

    Measured under Wine 8.0 with the official CPython 3.13.2: for a path over 260 characters
    ``os.path.realpath`` raises ``OSError: [WinError 234] More data available`` (Wine's
    ``GetFinalPathNameByHandleW`` says the buffer is short instead of how long it must be), also with
    the ``\\\\?\\`` prefix, while opening, listing, creating, renaming and deleting such paths work
    (tests/windows/test_wine_long_paths.py). On Windows, a path over 260 characters opens only with that
    prefix unless long paths are enabled. So: ``realpath``; where it fails, ``realpath`` of the
    ``\\\\?\\`` form (the prefix taken off again); where that fails too, the absolute, normalised path
    (links left as they are: a Windows torch install holds none)."""
    try:
        return os.path.realpath(path)
    except OSError:
        pass
    absolute = os.path.abspath(path)
    if sys.platform == "win32" and not absolute.startswith("\\\\"):
        try:
            found = os.path.realpath("\\\\?\\" + absolute)
            return found[4:] if found.startswith("\\\\?\\") and found[5:6] == ":" else found
        except OSError:
            pass
    return absolute


_PACKAGE_DIR = Path(real_path(__file__)).parent.parent


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


def prebuilt_dir() -> Path | None:
    """Our shims as the platform wheel carries them (``_data/prebuilt``; None in a checkout or a pure
    wheel: :mod:`zluda_runner.core.native` compiles them)."""
    folder = _PACKAGE_DIR / "_data" / "prebuilt"
    return folder if folder.is_dir() else None


class CachePaths:
    """Every sub-path of one cache folder, named in one place.

    ``downloads/`` and ``releases/`` hold fetched archives and unpacked releases
    (``release.cache``), ``inspect/`` per-file binary facts, ``plans/`` cached plans,
    ``links/`` per-plan link folders, ``redirect-maps/`` the audit redirector's maps,
    ``native/`` our compiled shims, ``traces/`` trace runs, ``results.db`` the results
    store, ``manifest/`` an updated release manifest.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"CachePaths({str(self.root)!r})"

    @property
    def downloads(self) -> Path:
        return self.root / "downloads"

    @property
    def releases(self) -> Path:
        return self.root / "releases"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    @property
    def trust_file(self) -> Path:
        return self.root / "trust.json"

    @property
    def inspect(self) -> Path:
        return self.root / "inspect"

    @property
    def plans(self) -> Path:
        return self.root / "plans"

    @property
    def links(self) -> Path:
        return self.root / "links"

    @property
    def redirect_maps(self) -> Path:
        return self.root / "redirect-maps"

    @property
    def native(self) -> Path:
        return self.root / "native"

    @property
    def traces(self) -> Path:
        return self.root / "traces"

    @property
    def results_db(self) -> Path:
        return self.root / "results.db"

    @property
    def manifest_dir(self) -> Path:
        return self.root / "manifest"
