"""Our shims compiled for the platform wheel (called by the build hook, ``hatch_build.py``): the
redirector and the tracer, each placed where :func:`zluda_runner.core.native.compile_c` looks for the
wheel's own build of exactly those sources (``_data/prebuilt/<key>/<name>``)."""

from __future__ import annotations

from pathlib import Path

from zluda_runner.core.native import compile_c, prebuilt_key
from zluda_runner.launch.redirect import LIBRARY_NAME, REDIRECTOR_ARGS, redirector_source
from zluda_runner.trace.interposer import INTERPOSER_NAME, interposer_build

WHEEL_FOLDER = "zluda_runner/_data/prebuilt"


def build_prebuilt(work: Path) -> dict[Path, str]:
    """Each shim compiled under ``work``: the built file -> its path inside the wheel."""
    out = Path(work) / "out"
    redirect = [redirector_source()]
    placed = {compile_c(redirect, LIBRARY_NAME, out, args=REDIRECTOR_ARGS):
              f"{WHEEL_FOLDER}/{prebuilt_key(redirect, LIBRARY_NAME, args=REDIRECTOR_ARGS)}"}
    sources, args, deps = interposer_build(Path(work) / "trace-gen")
    built = compile_c(sources, INTERPOSER_NAME, out, args=args, deps=deps, include_dirs=[deps[0].parent])
    placed[built] = f"{WHEEL_FOLDER}/{prebuilt_key(sources, INTERPOSER_NAME, args=args, deps=deps)}"
    return placed
