r"""Where things are, as text: a path made canonical (:func:`real_path`), the cache folder
(:func:`cache_folder`), the names of its memos' folders. Without pathlib, which the launch memo's hit
path does not import; :mod:`zluda_runner.core.paths` gives the same as :class:`~pathlib.Path`\ s."""

from __future__ import annotations

import os
import sys

from zluda_runner.core.envnames import CACHE_ENV

LAUNCHES = "launches"  # the cache's folder of launch memos (CachePaths.launches)
COMMAND_MEMOS = "commands"  # the cache's folder of printing commands' memos (CachePaths.command_memos)


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


def cache_folder() -> str:
    """``$ZLUDA_RUNNER_CACHE`` (``~`` expanded), else the platform's user cache folder."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return os.path.expanduser(env)
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
        return os.path.join(base, "zluda-runner", "Cache")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "zluda-runner")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(base, "zluda-runner")
