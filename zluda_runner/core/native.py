"""Compile small native helpers (our shims) with the system C compiler, cached.

A build is keyed by the SHA-256 of its sources, flags and compiler, so the
first use compiles (well under a second for our shims) and every later use is
a file lookup. Outputs are written to a temporary name and renamed into place,
so a concurrent or interrupted build never leaves a half-written library.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from zluda_runner.core.child import run_child
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
) -> Path:
    """Compile ``sources`` into ``out_dir/<key>/<output_name>`` unless already built.

    ``args`` are extra compiler/linker arguments (``-Wl,-soname,...``, ``-ldl``).
    ``deps`` are extra files (headers, version scripts) that feed the cache key.
    """
    compiler = cc or find_cc()
    srcs = [Path(s) for s in sources]
    key_files = srcs + [Path(d) for d in deps]
    for f in key_files:
        if not f.is_file():
            raise NativeBuildError(f"native source {f} is missing", hint="reinstall zluda-runner")
    base_args = ["-shared", "-fPIC"] if shared else []
    full_args = [*base_args, "-O2", *args]
    key = build_key(key_files, [*full_args, output_name], compiler)
    target_dir = Path(out_dir) / key
    target = target_dir / output_name
    if target.exists():
        return target
    # Linked under the exact final name (a PE DLL records its own file name in its export table),
    # in a private temporary folder, then renamed into place.
    with atomic_output(target) as tmp_out:
        cmd = [compiler, *(str(s) for s in srcs), "-o", str(tmp_out), *full_args]
        done = run_child(cmd, timeout=COMPILE_TIMEOUT_S)
        if not done.ok:
            raise NativeBuildError(
                f"compiling {output_name} failed:\n{(done.stderr or done.describe()).strip()}",
                hint=f"command was: {' '.join(cmd)}",
            )
    return target
