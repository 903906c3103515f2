"""Fixtures for the plan/launch acceptance tests: "NVIDIA" originals, target apps, stand-in releases."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from zluda_runner.devtools.standin import (
    StandinLib,
    build_release,
    libs_from_spec,
    without_soname,
    without_symbols,
    without_versions,
)

CUBLAS = "libcublas.so.13"
CUBLAS_SYMBOLS = ["cublasCreate_v2", "cublasSgemm_v2"]

# Stand-in release variants: (what is planted, verdict the plan must give for libcublas.so.13).
VARIANTS = {
    "good": "ok",
    "no_soname": "ok",
    "no_versions": "fatal",
    "other_version": "fatal",
    "missing_symbol": "warn",
}


def _cublas_standin(variant: str) -> StandinLib:
    lib = StandinLib(CUBLAS, CUBLAS, {CUBLAS: list(CUBLAS_SYMBOLS)})
    if variant == "no_soname":
        return without_soname(lib)
    if variant == "no_versions":
        return without_versions(lib)
    if variant == "other_version":
        return StandinLib(CUBLAS, CUBLAS, {"libcublas.so.12": list(CUBLAS_SYMBOLS)})
    if variant == "missing_symbol":
        return without_symbols(lib, ["cublasSgemm_v2"])
    return lib


@pytest.fixture(scope="session")
def standin_releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One ZLUDA-like release folder per variant (libcuda.so.1 + libcuda.so link, libcublas.so.13)."""
    base = tmp_path_factory.mktemp("standin")
    driver = libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}})
    return {
        variant: build_release([*driver, _cublas_standin(variant)], base / variant, build_dir=base / "build")
        for variant in VARIANTS
    }


@pytest.fixture(scope="session")
def orig_cublas(cc_build) -> Path:
    """The "real NVIDIA" libcublas.so.13 (answers 42), alone in its folder."""
    return cc_build(["plan/orig_cublas.c"], CUBLAS, args=[
        "-Wl,-soname," + CUBLAS, f"-Wl,--version-script={Path(__file__).parents[1] / 'fixtures/plan/orig_cublas.map'}",
    ], deps=["plan/orig_cublas.map"])


def _app_args(real_dir: Path, kind: str) -> list[str]:
    link = ["-Wl,-z,lazy", f"-L{real_dir}", f"-l:{CUBLAS}"]
    if kind == "rpath":
        return [*link, "-Wl,--disable-new-dtags", f"-Wl,-rpath,{real_dir}"]
    if kind == "runpath":
        return [*link, "-Wl,--enable-new-dtags", f"-Wl,-rpath,{real_dir}"]
    return link


@pytest.fixture(scope="session")
def apps(cc_build, orig_cublas: Path) -> dict[str, Path]:
    """The target app linked three ways: DT_RPATH / DT_RUNPATH to the originals' folder, or neither."""
    return {
        kind: cc_build(["plan/app.c"], f"app_{kind}", shared=False, args=_app_args(orig_cublas.parent, kind))
        for kind in ("rpath", "runpath", "none")
    }


def zluda_run(args: Sequence[str], *, env: dict[str, str] | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process (stdio captured by us, never by zluda-run itself)."""
    full_env = dict(os.environ if env is None else env)
    full_env.pop("LD_LIBRARY_PATH", None)
    return subprocess.run(
        [sys.executable, "-m", "zluda_runner", *args], capture_output=True, text=True, env=full_env,
        timeout=timeout, check=False,
    )
