"""Our LD_AUDIT redirector (``shims/redirect/redirect.c``): build it, write its map.

The redirector answers the loader's searches from a ``name<TAB>/abs/path`` map
(``$ZLUDA_RUNNER_REDIRECT_MAP``) before DT_RPATH is looked at, which is what
replaces ``libcublas.so.13`` under PyPI torch (DT_RPATH beats LD_LIBRARY_PATH).
A path request for a mapped file name (torch's ctypes preloads) is answered with
the bare name, so ld.so registers the needed name even for a shim without SONAME
(the mapped paths are link-folder entries on LD_LIBRARY_PATH; in a child that dropped
it, the mapped path itself is the answer).
It is compiled on first use into ``<cache>/native`` (content-keyed: a later
launch is a file lookup).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from zluda_runner.core import observe
from zluda_runner.core.errors import LaunchError
from zluda_runner.core.fsutil import atomic_write_text
from zluda_runner.core.paths import CachePaths, shims_dir

if TYPE_CHECKING:
    from zluda_runner.launch.linux import LinuxLaunch

MAP_ENV = "ZLUDA_RUNNER_REDIRECT_MAP"
DEBUG_ENV = "ZLUDA_RUNNER_REDIRECT_DEBUG"
LIBRARY_NAME = "libzluda_runner_redirect.so"
#: what the redirector reads (MAP_TEXT_MAX, MAP_ENTRIES_MAX in redirect.c): it refuses a larger map
MAP_MAX_BYTES = 256 * 1024
MAP_MAX_ENTRIES = 1024


def redirector_source() -> Path:
    return shims_dir() / "redirect" / "redirect.c"


REDIRECTOR_ARGS = ("-Wall",)


def build_redirector(cache_dir: Path) -> Path:
    """The redirector library: the platform wheel's where it loads, else compiled into ``<cache>/native``
    on first use."""
    from zluda_runner.core.native import compile_c  # only needed on the build path

    return compile_c([redirector_source()], LIBRARY_NAME, CachePaths(cache_dir).native, args=REDIRECTOR_ARGS,
                     prebuilt=True)


def map_text(mapping: Mapping[str, Path]) -> str:
    lines = []
    for name in sorted(mapping):
        target = os.path.abspath(mapping[name])
        if not name or "/" in name or any(c in name for c in "\t\n\0"):
            raise LaunchError(
                f"bad library name for the redirect map: {name!r}", hint="this is a planner bug"
            )
        if any(c in target for c in "\t\n\0"):
            raise LaunchError(
                f"the path {target!r} cannot go in the redirect map (tab or newline in it)",
                hint="move the release to a folder without such characters",
            )
        lines.append(f"{name}\t{target}\n")
    text = "".join(lines)
    size = len(text.encode("utf-8", "surrogateescape"))
    if len(lines) > MAP_MAX_ENTRIES or size > MAP_MAX_BYTES:
        raise LaunchError(
            f"the redirect map would hold {len(lines)} libraries in {size} bytes, more than the redirector "
            f"reads ({MAP_MAX_ENTRIES} entries, {MAP_MAX_BYTES} bytes): it would refuse it",
            hint="the release or the cache folder path is unusually large; use a shorter {opt:cache_dir}, or "
            "report the release",
        )
    return text


def write_redirect_map(cache_dir: Path, mapping: Mapping[str, Path]) -> Path:
    """``<cache>/redirect-maps/<sha>.tsv`` holding ``mapping`` (written once, atomically)."""
    text = map_text(mapping)
    folder = CachePaths(cache_dir).redirect_maps
    target = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:20]}.tsv"
    if observe.read(target, MAP_MAX_BYTES) == text.encode("utf-8", "surrogateescape"):
        return target
    atomic_write_text(target, text)
    return target


def redirect_launch(cache_dir: Path, mapping: Mapping[str, Path]) -> LinuxLaunch:
    """A :class:`~zluda_runner.launch.linux.LinuxLaunch` that redirects ``mapping`` through LD_AUDIT:
    a link folder (first on LD_LIBRARY_PATH) holding each name, and the redirector's map naming
    those link-folder entries (the only candidates it accepts for a mapped name)."""
    from zluda_runner.launch.linux import LinuxLaunch, prepare_link_dir

    cache_dir = Path(os.path.abspath(cache_dir))
    links = prepare_link_dir(cache_dir, mapping)
    return LinuxLaunch(
        link_dir=links,
        ld_audit=[str(build_redirector(cache_dir))],
        env={MAP_ENV: str(write_redirect_map(cache_dir, {name: links / name for name in mapping}))},
    )
