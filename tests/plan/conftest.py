"""Fixtures for the plan/launch acceptance tests: "NVIDIA" originals, target apps, stand-in releases."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
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

# Stand-in release variants (what is planted in libcublas.so.13); the tests hold the verdicts expected.
VARIANT_NAMES = ("good", "no_soname", "no_versions", "other_version", "missing_symbol")


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
        for variant in VARIANT_NAMES
    }


@pytest.fixture(scope="session")
def orig_cublas(cc_build) -> Path:
    """The "real NVIDIA" libcublas.so.13 (answers 42), alone in its folder."""
    script = Path(__file__).resolve().parents[1] / "fixtures" / "plan" / "orig_cublas.map"
    args = [f"-Wl,-soname,{CUBLAS}", f"-Wl,--version-script={script}"]
    return cc_build(["plan/orig_cublas.c"], CUBLAS, args=args, deps=["plan/orig_cublas.map"])


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


def _zluda_run(args: Sequence[str], *, env: dict[str, str] | None = None,
               timeout: float = 60) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ if env is None else env)
    for var in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT"):
        full_env.pop(var, None)
    return subprocess.run(
        [sys.executable, "-m", "zluda_runner", *args], capture_output=True, text=True, env=full_env,
        timeout=timeout, check=False,
    )


@pytest.fixture(scope="session")
def zluda_run() -> Callable[..., subprocess.CompletedProcess[str]]:
    """The real CLI in a child process (stdio captured by the test, never by zluda-run itself)."""
    return _zluda_run


@pytest.fixture(scope="session")
def cudart_client(cc_build, cudart_path: Path) -> Path:
    """A tiny program linked to NVIDIA's real libcudart: it dlopens libcuda.so.1 like any CUDA app."""
    folder = cudart_path.parent
    return cc_build(["plan/cudart_client.c"], "cudart_client", shared=False,
                    args=[f"-L{folder}", f"-l:{cudart_path.name}", f"-Wl,-rpath,{folder}"])
