"""Wine fixtures: a real PE loader, NVIDIA's real cudart from PyPI's win_amd64 wheels, mingw stand-ins.

Prerequisites (`.ci/run` provides each; elsewhere a missing one skips with the reason, in CI it fails):
Debian's ``wine64``, ``x86_64-w64-mingw32-gcc``, and the wheels ``nvidia-cuda-runtime-cu11`` and
``nvidia-cuda-runtime-cu12`` for win_amd64 in the folder named by ``ZLUDA_RUNNER_NVIDIA_WHEELS``
(tests never reach the network; .ci/run downloads them with ``pip download --no-deps --platform
win_amd64 --only-binary=:all:``). NVIDIA's binaries are never committed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require
from tests.windows.winpy import (
    DLL_OVERRIDES,
    DOWNLOAD_HINT,
    EMBED_SDIST,
    TORCH_WHEEL,
    WIN_WHEELS_ENV,
    WineEnv,
    WinPython,
    boot_prefix,
    build_project_wheel,
    copy_python,
    make_python,
    make_torch_cuda_shaped,
    stamp_large_files,
    stop_server,
)

WHEELS_ENV = "ZLUDA_RUNNER_NVIDIA_WHEELS"
DOWNLOAD = ("pip download --no-deps --platform win_amd64 --only-binary=:all: -d DIR "
            "nvidia-cuda-runtime-cu11 nvidia-cuda-runtime-cu12")
CUDART = {"cudart64_110.dll": "nvidia_cuda_runtime_cu11-", "cudart64_12.dll": "nvidia_cuda_runtime_cu12-"}


def _find_wine() -> str | None:
    for cand in (shutil.which("wine64"), "/usr/lib/wine/wine64", shutil.which("wine")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


@dataclass
class Wine:
    exe: str
    prefix: Path

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
        env.update(WINEPREFIX=str(self.prefix), WINEDEBUG="-all", WINEDLLOVERRIDES=DLL_OVERRIDES)
        return env

    def run(self, argv: Sequence[str | Path], cwd: Path, timeout: float = 120) -> str:
        """Run a Windows program; its stdout (the report lines), failing loudly on a bad exit."""
        proc = subprocess.run([self.exe, *map(str, argv)], cwd=cwd, env=self.env(), capture_output=True,
                              text=True, errors="replace", timeout=timeout)
        out = proc.stdout.replace("\r\n", "\n")
        assert proc.returncode == 0, f"wine {argv} -> {proc.returncode}\n{out}\n{proc.stderr[-2000:]}"
        return out


def winpath(path: Path) -> str:
    """How Wine's default Z: drive names a Linux path."""
    return "Z:" + str(path.resolve()).replace("/", "\\")


@pytest.fixture(scope="session")
def wine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wine]:
    exe = _find_wine()
    require(exe is not None, "Wine is not installed (apt-get install -y wine64)")
    assert exe is not None
    prefix = tmp_path_factory.mktemp("wineprefix")
    served = boot_prefix(exe, prefix)  # one wineserver for the session
    try:
        require((prefix / "drive_c" / "windows" / "system32").is_dir(), f"wineboot did not set up {prefix}")
        yield Wine(exe, prefix)
    finally:
        stop_server(served)


@pytest.fixture(scope="session")
def nvidia_cudart(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """NVIDIA's real cudart64_110.dll and cudart64_12.dll, extracted from the PyPI wheels."""
    folder = os.environ.get(WHEELS_ENV)
    require(bool(folder) and Path(folder or "").is_dir(),
            f"set {WHEELS_ENV} to a folder holding NVIDIA's win_amd64 wheels ({DOWNLOAD})")
    wheels = sorted(Path(folder or "").glob("*.whl"))
    out = tmp_path_factory.mktemp("nvidia")
    found: dict[str, Path] = {}
    for dll, prefix in CUDART.items():
        wheel = next((w for w in wheels if w.name.startswith(prefix) and w.name.endswith("win_amd64.whl")),
                     None)
        require(wheel is not None, f"no {prefix}*win_amd64.whl in {folder} ({DOWNLOAD})")
        assert wheel is not None
        with zipfile.ZipFile(wheel) as zf:
            member = next(n for n in zf.namelist() if n.endswith("/" + dll))
            (out / dll).write_bytes(zf.read(member))
        found[dll] = out / dll
    return found


@pytest.fixture(scope="session")
def standin(mingw_build):  # type: ignore[no-untyped-def]
    """``standin(tag, flag, name)``: a stand-in DLL that reports each call with its tag and own path."""

    def build(tag: str, flag: str, name: str, answer: int = 0) -> Path:
        args = [f'-DTAG="{tag}"', f"-D{flag}", f"-DANSWER={answer}"]
        return mingw_build(["windows/standin.c"], name, args=args)

    return build


# --------------------------------------------------------------------------- Windows CPython


@pytest.fixture(scope="session")
def win_wheels() -> Path:
    """The folder of Windows packages from PyPI (.ci/run downloads them): see tests/windows/winpy.py."""
    folder = Path(os.environ.get(WIN_WHEELS_ENV, "") or "/nonexistent")
    require(folder.is_dir() and (folder / EMBED_SDIST).is_file() and (folder / TORCH_WHEEL).is_file(),
            DOWNLOAD_HINT)
    return folder


@pytest.fixture(scope="session")
def project_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """zluda-runner's wheel, built once per session from this checkout."""
    return build_project_wheel(tmp_path_factory.mktemp("project-wheel"))


@pytest.fixture(scope="session")
def wine_env(wine: Wine) -> WineEnv:
    return WineEnv(wine.exe, wine.prefix)


@pytest.fixture(scope="session")
def win_templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the interpreters ``new_winpy`` copies are kept: one folder for the whole run, shared by
    every pytest-xdist worker (each worker's base folder is ``<run>/popen-gwN``)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base


def _template(wine_env: WineEnv, win_wheels: Path, project_wheel: Path, where: Path, *,
              torch: bool) -> WinPython:
    """The template interpreter ``new_winpy`` copies (``torch``: with PyPI's Windows torch): installed by
    pip and compiled once per run, by whichever worker asks first, under a lock the others wait on (a
    template is ~40 s of pip and of the Windows interpreter compiling; every worker asks for one at its
    start). A build that did not finish (its worker killed) is removed and made again."""
    import fcntl

    folder = where / ("win-template-torch" if torch else "win-template-bare")
    home, ready = folder / "python", folder / "ready"
    with open(where / (folder.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            made = make_python(wine_env, win_wheels, project_wheel, home, portable=False, torch=torch,
                               compiled=True)
            stamp_large_files(made)
            ready.touch()
    return WinPython(wine_env, home, portable=False)  # run by this worker's own Wine prefix


@pytest.fixture(scope="session")
def new_winpy(wine_env: WineEnv, win_wheels: Path, project_wheel: Path, win_templates: Path,
              tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """``new_winpy(portable=False, torch=True)``: a fresh Windows CPython 3.13 of its own, with
    zluda-runner installed from its wheel (a copy of the run's template, which pip installed once):
    for tests that change the interpreter or its torch (placement, version.py, a hook)."""
    templates: dict[bool, WinPython] = {}

    def make(*, portable: bool = False, torch: bool = True) -> WinPython:
        if torch not in templates:
            templates[torch] = _template(wine_env, win_wheels, project_wheel, win_templates, torch=torch)
        home = tmp_path_factory.mktemp("portable-py" if portable else "py") / "python"
        return copy_python(templates[torch], home, portable=portable)

    return make


@pytest.fixture(scope="session")
def winpy(new_winpy) -> WinPython:  # type: ignore[no-untyped-def]
    """A regular Windows CPython (no ._pth: honours PYTHONPATH) with zluda-runner and PyPI's Windows
    torch 2.13.0, shared by the session: do not change it (use ``new_winpy``)."""
    return new_winpy(portable=False, torch=True)


@pytest.fixture(scope="session")
def winpy_portable(new_winpy) -> WinPython:  # type: ignore[no-untyped-def]
    """The portable layout (python313._pth with ``import site``, ComfyUI-style), shared: do not change it."""
    return new_winpy(portable=True, torch=True)


@pytest.fixture(scope="session")
def cuda11_torch_dlls(nvidia_cudart: dict[str, Path], mingw_build, standin) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    """What a cu118 build of torch adds to torch/lib, for PyPI's real CPU torch: NVIDIA's real
    cudart64_110.dll, an "NVIDIA" cuBLAS stand-in (``cublas64_11.dll``, answers 42, reports as
    ``[standin nvidia cublas]``) and a ``torch_cuda.dll`` importing both by those names."""
    cudart = nvidia_cudart["cudart64_110.dll"]
    cublas = standin("nvidia cublas", "CUBLAS", "cublas64_11.dll", answer=42)
    torch_cuda = mingw_build(["windows/torch_cuda.c", cudart, cublas], "torch_cuda.dll")
    return {"cudart64_110.dll": cudart, "cublas64_11.dll": cublas, "torch_cuda.dll": torch_cuda}


@pytest.fixture(scope="session")
def new_cuda11_winpy(new_winpy, cuda11_torch_dlls: dict[str, Path]):  # type: ignore[no-untyped-def]
    """``new_cuda11_winpy(portable=False)``: a fresh Windows CPython whose real torch 2.13.0 is made a
    CUDA 11.8 build (``version.py`` and the DLLs of ``cuda11_torch_dlls`` in torch/lib): the target
    of the fork (3.x) releases."""

    def make(*, portable: bool = False) -> WinPython:
        py: WinPython = new_winpy(portable=portable, torch=True)
        make_torch_cuda_shaped(py.site_packages / "torch", "11.8", cuda11_torch_dlls)
        return py

    return make


@pytest.fixture
def windows_torch(tmp_path: Path, nvidia_cudart: dict[str, Path], mingw_build, standin) -> Path:
    """A Windows torch (CUDA 12) tree: NVIDIA's real cudart64_12.dll, an "NVIDIA" cuBLAS stand-in
    (answers 42), a torch_cuda.dll importing both, torch's own __init__.py (its DLL loop)."""
    import importlib.util

    torch = tmp_path / "site-packages" / "torch"
    lib = torch / "lib"
    lib.mkdir(parents=True)
    spec = importlib.util.find_spec("torch")
    require(spec is not None and spec.origin is not None,
            "torch is not installed: its __init__.py (the same in every wheel) is the fixture")
    assert spec is not None and spec.origin is not None
    shutil.copyfile(spec.origin, torch / "__init__.py")
    (torch / "version.py").write_text("__version__ = '2.7.1+cu128'\ncuda = '12.8'\nhip = None\n")
    shutil.copyfile(nvidia_cudart["cudart64_12.dll"], lib / "cudart64_12.dll")
    nvidia_cublas = standin("nvidia cublas", "CUBLAS", "cublas64_12.dll", answer=42)
    shutil.copyfile(nvidia_cublas, lib / "cublas64_12.dll")
    torch_cuda = mingw_build(["windows/torch_cuda.c", nvidia_cudart["cudart64_12.dll"], nvidia_cublas],
                             "torch_cuda.dll")
    shutil.copyfile(torch_cuda, lib / "torch_cuda.dll")
    return torch
