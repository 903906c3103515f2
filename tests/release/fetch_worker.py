"""Run by test_fetch in a separate process: ensure one release, print the folder.

argv: cache_dir release_id asset_name url sha256 [progress]
(``progress``: show progress and the "waiting for another zluda-run" line on stderr)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from zluda_runner.release.cache import ensure_release


@dataclass
class Release:
    id: str


@dataclass
class Asset:
    name: str
    url: str
    sha256: str | None
    format: str
    size: int | None = None


def main() -> None:
    cache, release_id, name, url, sha = sys.argv[1:6]
    progress = sys.argv[6:7] == ["progress"]
    asset = Asset(name, url, sha, "tar.gz")
    folder = ensure_release(Release(release_id), asset, Path(cache), progress=progress)
    print(folder, flush=True)


if __name__ == "__main__":
    main()
