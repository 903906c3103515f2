"""Linux launch mechanisms: link folder, LD_LIBRARY_PATH, LD_PRELOAD, LD_AUDIT, plain env.

The planner decides *which* mechanism each need gets (from the loader model);
this module only expresses the decision as a :class:`LinuxLaunch` and turns it
into the workload's environment with :func:`compose_env`.

- ``link_dir``: a folder of symlinks named exactly as the loader looks for them
  (``libcublas.so.13`` -> the release's file), made by :func:`prepare_link_dir`;
  it goes first on ``LD_LIBRARY_PATH``. Wins wherever nothing earlier in the
  search order (DT_RPATH, an already loaded object) does.
- ``ld_library_path``: further folders, after ``link_dir``, before the user's.
- ``ld_preload``: bare names (found through the search path, so the loaded
  object carries the needed name) or paths; before the user's preloads.
- ``ld_audit``: audit libraries (our redirector, the release's ``zluda_ld``).
- ``env``: variables to set (``ZLUDA_RUNNER_REDIRECT_MAP``, ``ZLUDA_NVRTC_LIB``,
  ``DISABLE_ADDMM_CUDA_LT`` ...); they override the user's values.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core import observe
from zluda_runner.core.errors import CacheError, LaunchError
from zluda_runner.core.paths import CachePaths
from zluda_runner.core.serial import JsonMixin


@dataclass
class LinuxLaunch(JsonMixin):
    """How the workload's loader environment is set up (see the module doc)."""

    link_dir: Path | None = None
    ld_library_path: list[str] = field(default_factory=list)
    ld_preload: list[str] = field(default_factory=list)
    ld_audit: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def library_path_entries(self) -> list[str]:
        head = [str(self.link_dir)] if self.link_dir is not None else []
        return [*head, *self.ld_library_path]


CURRENT_DIR = "./"  # what ld.so reads an empty LD_LIBRARY_PATH component as (glibc fillin_rpath)


def _split_user(value: str | None, separators: str, *, empty_means: str | None = None) -> list[str]:
    """The user's entries. An empty component is dropped, or (``empty_means``: LD_LIBRARY_PATH, where
    ld.so searches the current folder for it) written as that folder, so the workload keeps it."""
    if not value:  # an empty variable is ignored by ld.so as a whole
        return []
    parts = [value]
    for sep in separators:
        parts = [piece for part in parts for piece in part.split(sep)]
    if empty_means is not None:
        return [p if p else empty_means for p in parts]
    return [p for p in parts if p.strip()]


def _ours(entries: Iterable[str], variable: str) -> list[str]:
    out = []
    for entry in entries:
        text = str(entry)
        if not text:
            raise LaunchError(f"an empty entry was planned for {variable}", hint="this is a planner bug")
        if "/" in text or variable == "LD_LIBRARY_PATH":
            text = os.path.abspath(text)  # a workload that changes folder must keep the set-up
        if ":" in text or (variable == "LD_PRELOAD" and any(c.isspace() for c in text)):
            raise LaunchError(
                f"{variable} cannot express the path {text!r} (it contains ':' or a space)",
                hint="use a cache folder whose path has no ':' or spaces ({opt:cache_dir})",
            )
        out.append(text)
    return out


def _join(ours: list[str], user: list[str]) -> str | None:
    seen: set[str] = set()
    merged = []
    for entry in [*ours, *user]:
        if entry not in seen:
            seen.add(entry)
            merged.append(entry)
    return ":".join(merged) if merged else None


def compose_env(base_env: Mapping[str, str], launch: LinuxLaunch) -> dict[str, str]:
    """The workload's environment: ``base_env`` plus ``launch``, ours first, the user's kept after.

    Never produces an empty path component: the user's empty LD_LIBRARY_PATH component (the current
    folder to ld.so) is kept as ``./``, which ld.so reads the same; an entry already present (a
    nested ``zluda-run``) is not repeated.
    """
    env = dict(base_env)
    env.update(launch.env)
    lists = (
        ("LD_LIBRARY_PATH", launch.library_path_entries(), ":;"),
        ("LD_PRELOAD", launch.ld_preload, ": \t\n"),
        ("LD_AUDIT", launch.ld_audit, ":"),
    )
    for variable, entries, separators in lists:
        ours = _ours(entries, variable)
        empty = CURRENT_DIR if variable == "LD_LIBRARY_PATH" else None
        user = _split_user(base_env.get(variable), separators, empty_means=empty)
        if variable in launch.env:  # an explicit value from the plan replaces the user's
            user = _split_user(launch.env[variable], separators, empty_means=empty)
        value = _join(ours, user)
        if value is None:
            env.pop(variable, None)
        else:
            env[variable] = value
    return env


def _check_link_name(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise LaunchError(f"bad library name for the link folder: {name!r}", hint="this is a planner bug")


def link_dir_key(mapping: Mapping[str, Path]) -> str:
    """Content key of a name -> file mapping (names and absolute targets)."""
    digest = hashlib.sha256()
    for name in sorted(mapping):
        digest.update(name.encode() + b"\0" + os.fsencode(os.path.abspath(mapping[name])) + b"\n")
    return digest.hexdigest()[:20]


def _link_dir_is_valid(folder: Path, mapping: Mapping[str, Path]) -> bool:
    """Observed (:mod:`zluda_runner.core.observe`): a launch memo checks the folder again."""
    if set(observe.names(folder) or ()) != set(mapping):
        return False
    return all(observe.readlink(folder / n) == os.path.abspath(t) for n, t in mapping.items())


def prepare_link_dir(cache_dir: Path, mapping: Mapping[str, Path]) -> Path:
    """A folder ``<cache>/links/<key>`` of symlinks ``name -> file``, reused by later launches.

    Built in a temporary folder next to it and renamed into place, so a
    concurrent or interrupted launch never sees a half-made folder.
    """
    if not mapping:
        raise LaunchError("no libraries to link", hint="this is a planner bug: the mapping is empty")
    for name, target in mapping.items():
        _check_link_name(name)
        if not observe.is_file(target):
            raise LaunchError(
                f"release file for {name} is missing: {target}",
                hint="fetch the release again ({cmd:fetch}) or check {opt:zluda_dir}",
            )
    parent = CachePaths(cache_dir).links
    final = parent / link_dir_key(mapping)
    if _link_dir_is_valid(final, mapping):
        return final
    try:
        return _make_link_dir(parent, final, mapping)
    except OSError as exc:  # a read-only or full cache, links/ not a folder: said, not a traceback
        raise CacheError(
            f"cannot make the launch's library links in {parent}: {exc.strerror or exc}",
            hint="make the cache folder writable, or give another one with {opt:cache_dir DIR}",
        ) from None


def _make_link_dir(parent: Path, final: Path, mapping: Mapping[str, Path]) -> Path:
    import tempfile  # only when the links are made (a cached launch finds them)

    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=parent))
    try:
        for name, target in mapping.items():
            os.symlink(os.path.abspath(target), tmp / name)
        if final.exists():  # stale or broken (e.g. interrupted by hand): replace it
            shutil.rmtree(final, ignore_errors=True)
        try:
            os.rename(tmp, final)
        except OSError:
            if not _link_dir_is_valid(final, mapping):  # a concurrent launch won; anything else is fatal
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final
