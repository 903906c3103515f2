"""Compile small native helpers (our shims) with the system C compiler, cached; or take the ones the
platform wheel carries, built when the wheel was.

A build is keyed by the SHA-256 of its sources, flags and compiler, so the
first use compiles (well under a second for our shims) and every later use is
a file lookup. Outputs are written to a temporary name and renamed into place,
so a concurrent or interrupted build never leaves a half-written library.

Prebuilt (``compile_c(..., prebuilt=True)``): the Linux x86-64 wheel carries our redirector and tracer
compiled by its build hook (``hatch_build.py``) under ``_data/prebuilt/<key>/<name>``, ``<key>`` the
SHA-256 of the sources and flags without the compiler (:func:`prebuilt_key`), so a file is only ever taken
for exactly the sources it was built from. It is taken when this host's loader resolves it (``ld.so
--list``: its needed libraries and symbol versions, nothing run; the verdict kept in the cache), so a
machine without a C compiler runs the launch; where it does not load, it is compiled here as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from zluda_runner.core.errors import NativeBuildError
from zluda_runner.core.fsutil import atomic_output

COMPILE_TIMEOUT_S = 600.0


def find_cc() -> str:
    """The C compiler: ``$CC`` or ``cc`` on PATH."""
    cc = os.environ.get("CC", "cc")
    found = shutil.which(cc)
    if not found:
        raise NativeBuildError(
            f"no C compiler found (looked for {cc!r})",
            hint="install gcc (Debian/Ubuntu: apt-get install gcc) or set CC",
        )
    return found


def build_key(sources: Sequence[Path], args: Sequence[str], cc: str) -> str:
    digest = hashlib.sha256()
    digest.update(cc.encode())
    for arg in args:
        digest.update(b"\0arg:" + arg.encode())
    for src in sources:
        digest.update(b"\0src:" + src.name.encode() + b"\0")
        digest.update(Path(src).read_bytes())
    return digest.hexdigest()[:20]


def compile_c(
    sources: Sequence[Path | str],
    output_name: str,
    out_dir: Path,
    *,
    args: Sequence[str] = (),
    shared: bool = True,
    deps: Sequence[Path | str] = (),
    cc: str | None = None,
    prebuilt: bool = False,
    include_dirs: Sequence[Path] = (),
) -> Path:
    """Compile ``sources`` into ``out_dir/<key>/<output_name>`` unless already built.

    ``args`` are extra compiler/linker arguments (``-Wl,-soname,...``, ``-ldl``).
    ``deps`` are extra files (headers, version scripts) that feed the cache key.
    ``prebuilt``: the wheel's own build of exactly these sources is taken where it loads (module doc).
    ``include_dirs``: ``-I`` folders, not in the key (where a header lies is no part of what is built:
    the headers themselves are ``deps``).
    """
    srcs = [Path(s) for s in sources]
    key_files = srcs + [Path(d) for d in deps]
    for f in key_files:
        if not f.is_file():
            raise NativeBuildError(f"native source {f} is missing", hint="reinstall zluda-runner")
    base_args = ["-shared", "-fPIC"] if shared else []
    full_args = [*base_args, "-O2", *args]
    if prebuilt:
        found = _prebuilt(key_files, full_args, output_name, Path(out_dir))
        if found is not None:
            return found
    compiler = cc or find_cc()
    key = build_key(key_files, [*full_args, output_name], compiler)
    target_dir = Path(out_dir) / key
    target = target_dir / output_name
    if target.exists():
        return target
    # Linked under the exact final name (a PE DLL records its own file name in its export table),
    # in a private temporary folder, then renamed into place.
    from zluda_runner.core.child import run_child  # a cached build (every launch) starts no child

    with atomic_output(target) as tmp_out:
        cmd = [compiler, *(str(s) for s in srcs), "-o", str(tmp_out), *full_args,
               *(f"-I{d}" for d in include_dirs)]
        done = run_child(cmd, timeout=COMPILE_TIMEOUT_S)
        if not done.ok:
            raise NativeBuildError(
                f"compiling {output_name} failed:\n{(done.stderr or done.describe()).strip()}",
                hint=f"command was: {' '.join(cmd)}",
            )
    return target


LOADER = "/lib64/ld-linux-x86-64.so.2"  # glibc's x86-64 loader (the path every x86-64 program names)
PREBUILT_CHECKED = "prebuilt-checked"  # under a build's out_dir: the loader's verdicts, one file each


def prebuilt_key(sources: Sequence[Path | str], output_name: str, *, args: Sequence[str] = (),
                 shared: bool = True, deps: Sequence[Path | str] = ()) -> str:
    """Where the wheel keeps its build of these sources: ``<key>/<output_name>`` under ``_data/prebuilt``
    (the key of :func:`compile_c` without the compiler)."""
    key_files = [Path(s) for s in sources] + [Path(d) for d in deps]
    full_args = [*(["-shared", "-fPIC"] if shared else []), "-O2", *args]
    return f"{build_key(key_files, [*full_args, output_name], 'prebuilt')}/{output_name}"


def _prebuilt(key_files: Sequence[Path], full_args: Sequence[str], output_name: str,
              out_dir: Path) -> Path | None:
    from zluda_runner.core.paths import prebuilt_dir

    folder = prebuilt_dir()
    if folder is None:
        return None
    key = build_key(key_files, [*full_args, output_name], "prebuilt")
    candidate = folder / key / output_name
    if not candidate.is_file():
        return None
    verdict = out_dir / PREBUILT_CHECKED / f"{key}-{output_name}"
    if verdict.is_file():
        return candidate
    if not loads_here(candidate):
        return None
    with contextlib.suppress(OSError):  # a read-only cache checks again next time
        verdict.parent.mkdir(parents=True, exist_ok=True)
        verdict.write_text(str(candidate) + "\n", encoding="utf-8")
    return candidate


def loads_here(library: Path) -> bool:
    """Whether this host's loader resolves ``library``: ``ld.so --list`` loads and relocates it with its
    needed libraries and symbol versions, runs none of its code, and fails when one is missing."""
    if not os.path.exists(LOADER):
        return False
    from zluda_runner.core.child import run_child

    done = run_child([LOADER, "--list", str(library)], timeout=30.0)
    return done.ok
