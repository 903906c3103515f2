"""Where things live: the cache, the packaged manifests and shim sources."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.core.places import COMMAND_MEMOS, LAUNCHES, cache_folder
from zluda_runner.core.places import real_path as real_path

_PACKAGE_DIR = Path(real_path(__file__)).parent.parent


def default_cache_dir() -> Path:
    """``$ZLUDA_RUNNER_CACHE``, else the platform's user cache folder (:func:`~zluda_runner.core.places.
    cache_folder`)."""
    return Path(cache_folder())


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
    ``links/`` per-plan link folders, ``launches/`` the memos of plain launches, ``commands/`` those of
    printing commands (``releases``),
    ``redirect-maps/`` the audit redirector's maps,
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
    def launches(self) -> Path:
        """The launch memos (:mod:`zluda_runner.commands.launchmemo`): one small file per plain launch."""
        return self.root / LAUNCHES

    @property
    def command_memos(self) -> Path:
        """The memos of printing commands (:mod:`zluda_runner.commands.commandmemo`): one per command line."""
        return self.root / COMMAND_MEMOS

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
