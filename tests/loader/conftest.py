"""Helpers for the ELF/loader tests: lay built fixtures out in folders, run them under the real ld.so."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from zluda_runner.loader.glibc import LoaderEnv, LoaderModel, LoadResult
from zluda_runner.loader.ldlog import bound_files, parse_ld_debug


@dataclass
class RealRun:
    returncode: int
    stdout: str
    stderr: str
    bindings: dict[str, str]


def _base_env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")}
    env.update(extra)
    return env


def run_real(exe: Path, extra_env: Mapping[str, str] | None = None) -> RealRun:
    """Run ``exe`` with LD_DEBUG=libs; parse what the real loader bound."""
    env = _base_env(extra_env or {})
    env["LD_DEBUG"] = "libs"
    proc = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=30, check=False)
    return RealRun(proc.returncode, proc.stdout, proc.stderr, bound_files(parse_ld_debug(proc.stderr)))


def model_load(exe: Path, extra_env: Mapping[str, str] | None = None) -> LoadResult:
    env = LoaderEnv.from_host(_base_env(extra_env or {}))
    return LoaderModel(env).load(exe)


def assert_model_matches_real(
    exe: Path, extra_env: Mapping[str, str] | None = None
) -> tuple[LoadResult, RealRun]:
    """Every name the real loader searched for must bind to the same file in the model."""
    real = run_real(exe, extra_env)
    model = model_load(exe, extra_env)
    assert real.bindings, f"no LD_DEBUG output parsed:\n{real.stderr}"
    for name, path in real.bindings.items():
        if "/" in name:
            continue  # loaded by explicit path (a preload), not searched
        modelled = model.binding(name)
        assert modelled is not None, f"model did not bind {name} (real: {path})"
        assert os.path.realpath(modelled) == os.path.realpath(path), (name, modelled, path)
    return model, real


@pytest.fixture
def place(tmp_path: Path) -> Callable[[Path, str], Path]:
    """Copy a built file to tmp_path/<rel> (folders created), keeping its name unless rel names it."""

    def copy(built: Path, rel: str) -> Path:
        dest = tmp_path / rel
        if rel.endswith("/"):
            dest = dest / built.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, dest)
        return dest

    return copy


@pytest.fixture(scope="session")
def which_libs(cc_build: Callable[..., Path]) -> dict[str, Path]:
    """libwhich.so (SONAME libwhich.so) built three times, saying rpath / llp / runpath."""
    return {
        tag: cc_build(["elf/which.c"], "libwhich.so", args=[f'-DWHICH="{tag}"', "-Wl,-soname,libwhich.so"])
        for tag in ("rpath", "llp", "runpath", "default")
    }
