"""Fixtures for the public-API tests: stand-in releases (Linux ELF, Windows PE) and targets to plan for.

The tests themselves use only ``import zluda_runner as zr``; the fixtures build what they act on with the
project's own stand-in tools (zluda_runner.devtools.standin) and the same C sources tests/plan uses.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import require
from tests.release.conftest import ZLUDA_LIKE, AssetServer, _serve, sha256, tar_gz
from zluda_runner.devtools.standin import StandinLib, build_release, libs_from_spec

CUBLAS = "libcublas.so.13"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# a cu118 torch's torch/lib: name -> -D flag of tests/fixtures/plan/win_stub.c (NVIDIA's originals)
WIN_ORIGINALS = {"cublas64_11.dll": "CUBLAS", "cusparse64_11.dll": "CUSPARSE", "cufft64_10.dll": "CUFFT",
                 "nvrtc64_112_0.dll": "NVRTC", "cudart64_110.dll": "CUDART"}
# the fork's zip (fork-3.9.5 ZLUDA-windows-rocm6-amd64.zip): file -> -D flag
FORK_FILES = {"nvcuda.dll": "DRIVER", "nvml.dll": "NVML", "cublas.dll": "CUBLAS", "cusparse.dll": "CUSPARSE",
              "cufft.dll": "CUFFT", "cufftw.dll": "CUFFTW", "nvrtc.dll": "NVRTC"}


@pytest.fixture(scope="session")
def linux_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ZLUDA-like Linux release folder: libcuda.so.1 and libcublas.so.13 stand-ins (C stubs)."""
    base = tmp_path_factory.mktemp("api-standin")
    driver = libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}})
    cublas = StandinLib(CUBLAS, CUBLAS, {CUBLAS: ["cublasCreate_v2", "cublasSgemm_v2"]})
    return build_release([*driver, cublas], base / "zluda", build_dir=base / "build")


@pytest.fixture(scope="session")
def mismatched_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release whose libcublas.so.13 exports the libcublas.so.12 version node: the app's versioned
    imports cannot bind to it (a fatal verdict)."""
    base = tmp_path_factory.mktemp("api-mismatch")
    driver = libs_from_spec({"libcuda.so.1": {"soname": "libcuda.so.1"}})
    cublas = StandinLib(CUBLAS, CUBLAS, {"libcublas.so.12": ["cublasCreate_v2", "cublasSgemm_v2"]})
    return build_release([*driver, cublas], base / "zluda", build_dir=base / "build")


@pytest.fixture(scope="session")
def cuda_app(cc_build) -> Path:
    """A CUDA-like program linked (DT_RPATH) to a "real NVIDIA" libcublas.so.13 that answers 42; a ZLUDA
    stand-in answers 0 (tests/fixtures/plan/app.c prints ``create=N``)."""
    script = FIXTURES / "plan" / "orig_cublas.map"
    orig = cc_build(["plan/orig_cublas.c"], CUBLAS, deps=["plan/orig_cublas.map"],
                    args=[f"-Wl,-soname,{CUBLAS}", f"-Wl,--version-script={script}"])
    link = ["-Wl,-z,lazy", f"-L{orig.parent}", f"-l:{CUBLAS}", "-Wl,--disable-new-dtags",
            f"-Wl,-rpath,{orig.parent}"]
    return cc_build(["plan/app.c"], "app_rpath", shared=False, args=link)


@pytest.fixture(scope="session")
def windows_kit(mingw_build, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(site-packages of a Windows cu118 torch made of PE stand-ins, the fork's unpacked zip folder)."""
    spec = importlib.util.find_spec("torch")
    require(spec is not None and spec.origin is not None,
            "torch is not installed: its __init__.py is the fixture")
    assert spec is not None and spec.origin is not None
    base = tmp_path_factory.mktemp("api-win")
    site = base / "venv" / "Lib" / "site-packages"
    lib = site / "torch" / "lib"
    lib.mkdir(parents=True)
    (site / "torch" / "version.py").write_text(
        "__version__ = '2.3.1+cu118'\ncuda = '11.8'\nhip = None\ngit_version = 'x'\n")
    shutil.copyfile(spec.origin, site / "torch" / "__init__.py")  # torch's own DLL loop
    originals = []
    for name, flag in WIN_ORIGINALS.items():
        built = mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}", "-DANSWER=42"])
        shutil.copy2(built, lib / name)
        originals.append(built)
    shutil.copy2(mingw_build(["plan/win_torch_cuda.c", *originals], "torch_cuda.dll"), lib / "torch_cuda.dll")
    fork = base / "ZLUDA"
    fork.mkdir()
    for name, flag in FORK_FILES.items():
        shutil.copy2(mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}"]), fork / name)
    for name in ("zluda.exe", "zluda_redirect.dll"):  # what tells the fork's zip from another folder
        (fork / name).write_bytes(b"MZ")
    return site, fork


@pytest.fixture
def windows_site(windows_kit: tuple[Path, Path], tmp_path: Path) -> Path:
    """A private copy of the Windows site-packages (tests place into it)."""
    work = tmp_path / "site-packages"
    shutil.copytree(windows_kit[0], work)
    return work


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[AssetServer]:
    """tests/release's HTTP server on 127.0.0.1 (no proxy, no mirror from the environment)."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                "ZLUDA_RUNNER_MIRROR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    yield from _serve(AssetServer())


@pytest.fixture
def kit() -> SimpleNamespace:
    return SimpleNamespace(sha256=sha256, tar_gz=tar_gz, ZLUDA_LIKE=ZLUDA_LIKE)
