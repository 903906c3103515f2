"""Fixtures of the inspection tests: Windows stand-in DLLs and fake torch installs.

PE: the DLLs of tests/fixtures/pe/ are built with mingw-w64.

GNU ld links a dlltool delay-import library but leaves the PE "Delay Import
Directory" entry empty (MSVC's link.exe fills it for /DELAYLOAD).  The loader
never needs it (the delay thunks carry their own descriptor), but readers do;
so after linking we point that directory entry at the descriptor dlltool made,
which is what link.exe would have written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pefile
import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pe"
TARGET_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inspection"
DLLTOOL = "x86_64-w64-mingw32-dlltool"
WINDRES = "x86_64-w64-mingw32-windres"
NM = "x86_64-w64-mingw32-nm"


@dataclass
class PeFixtures:
    cublas: Path  # cublas64_12.dll: named exports, one NONAME ordinal, one forwarder
    cudart: Path  # cudart64_12.dll: exports, with a version resource
    nvrtc: Path  # nvrtc64_120_0.dll
    importer: Path  # torch_cuda.dll: imports cublas (one by ordinal) and cudart, delay-loads nvrtc


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {proc.stderr}")


def set_delay_import_directory(dll: Path) -> None:
    """Point the Delay Import data directory at the first ``__DELAY_IMPORT_DESCRIPTOR_*`` symbol."""
    out = subprocess.run([NM, str(dll)], capture_output=True, text=True, check=True).stdout
    addresses = [int(parts[0], 16) for parts in (line.split() for line in out.splitlines())
                 if len(parts) == 3 and parts[2].startswith("__DELAY_IMPORT_DESCRIPTOR_")]
    assert addresses, "no delay-import descriptor linked"
    pe = pefile.PE(str(dll))
    try:
        index = pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"]
        entry = pe.OPTIONAL_HEADER.DATA_DIRECTORY[index]
        entry.VirtualAddress = min(addresses) - pe.OPTIONAL_HEADER.ImageBase
        entry.Size = 32 * (len(addresses) + 1)  # descriptors + the all-zero terminator
        data = pe.write()
    finally:
        pe.close()
    dll.write_bytes(bytes(data))


def build_pe_fixtures(mingw_build, work: Path) -> PeFixtures:
    for tool in (DLLTOOL, WINDRES, NM):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} not installed")
    work.mkdir(parents=True, exist_ok=True)
    cublas = mingw_build(["pe/cublas_stub.c", "pe/cublas_stub.def"], "cublas64_12.dll")
    version_obj = work / "version.o"
    _run([WINDRES, str(FIXTURES / "version.rc"), "-O", "coff", "-o", str(version_obj)])
    cudart = mingw_build(["pe/cudart_stub.c", "pe/cudart_stub.def", version_obj], "cudart64_12.dll")
    nvrtc = mingw_build(["pe/nvrtc_stub.c", "pe/nvrtc_stub.def"], "nvrtc64_120_0.dll")
    cublas_lib = work / "libcublas64_12.a"
    _run([DLLTOOL, "-d", str(FIXTURES / "cublas_stub.def"), "-l", str(cublas_lib)])
    nvrtc_delay = work / "libnvrtc_delay.a"
    _run([DLLTOOL, "-d", str(FIXTURES / "nvrtc_stub.def"), "-y", str(nvrtc_delay)])
    built = mingw_build(["pe/importer.c", cublas_lib, cudart, nvrtc_delay], "torch_cuda.dll")
    importer = work / "torch_cuda.dll"
    shutil.copyfile(built, importer)
    set_delay_import_directory(importer)
    return PeFixtures(cublas=cublas, cudart=cudart, nvrtc=nvrtc, importer=importer)



IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need(condition: bool, reason: str) -> None:
    """Like tests/conftest.py's ``require``: skip on a developer machine, fail in CI."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"prerequisite missing in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pe_dlls(mingw_build, tmp_path_factory: pytest.TempPathFactory) -> PeFixtures:
    missing = [t for t in (DLLTOOL, WINDRES, NM) if shutil.which(t) is None]
    need(not missing, f"mingw-w64 binutils missing: {missing}")
    return build_pe_fixtures(mingw_build, tmp_path_factory.mktemp("pe"))


# --------------------------------------------------------------------------- fake Linux torch


@dataclass
class ElfStandIns:
    cublas: Path
    cudart: Path
    cudnn: Path
    cufft: Path
    driver: Path
    torch_cuda: Path
    c10_cuda: Path
    torch_python: Path
    torch_c: Path
    cuda_app: Path


@dataclass
class FakeTorch:
    site_packages: Path
    torch_dir: Path
    extra_dir: Path  # holds libcufft.so.12 and libcuda.so.1: reachable only through LD_LIBRARY_PATH

    @property
    def env(self) -> dict[str, str]:
        """The environment a workload would run with: PYTHONPATH finds the fake torch."""
        env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
        env["PYTHONPATH"] = str(self.site_packages)
        env["LD_LIBRARY_PATH"] = str(self.extra_dir)
        return env


def _version_script(name: str) -> list[str]:
    return [f"-Wl,--version-script,{TARGET_FIXTURES / name}"]


@pytest.fixture(scope="session")
def elf_stand_ins(cc_build) -> ElfStandIns:
    def soname(name: str) -> list[str]:
        return [f"-Wl,-soname,{name}"]

    cublas = cc_build(["inspection/cublas.c"], "libcublas.so.13", deps=["inspection/cublas.map"],
                      args=[*soname("libcublas.so.13"), *_version_script("cublas.map")])
    cudart = cc_build(["inspection/cudart.c"], "libcudart.so.13", deps=["inspection/cudart.map"],
                      args=[*soname("libcudart.so.13"), *_version_script("cudart.map")])
    cudnn = cc_build(["inspection/cudnn.c"], "libcudnn.so.9", args=soname("libcudnn.so.9"))
    cufft = cc_build(["inspection/cufft.c"], "libcufft.so.12", args=soname("libcufft.so.12"))
    driver = cc_build(["inspection/driver.c"], "libcuda.so.1", args=soname("libcuda.so.1"))
    rpath = ["-Wl,--disable-new-dtags"]
    torch_cuda = cc_build(
        ["inspection/torch_cuda.c", cublas, cudart, cudnn, cufft], "libtorch_cuda.so",
        args=[*soname("libtorch_cuda.so"), *rpath,
              "-Wl,-rpath,$ORIGIN/../../nvidia/cu13/lib:$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN"],
    )
    c10_cuda = cc_build(["inspection/c10_cuda.c", cudart], "libc10_cuda.so",
                        args=[*soname("libc10_cuda.so"), *rpath, "-Wl,-rpath,$ORIGIN/../../nvidia/cu13/lib"])
    torch_python = cc_build(["inspection/torch_python.c", torch_cuda, c10_cuda], "libtorch_python.so",
                            args=[*soname("libtorch_python.so"), *rpath, "-Wl,-rpath,$ORIGIN"])
    torch_c = cc_build(["inspection/torch_c.c", torch_python], "_C.cpython-311-x86_64-linux-gnu.so",
                       args=[*rpath, "-Wl,-rpath,$ORIGIN/lib"])
    cuda_app = cc_build(["inspection/cuda_app.c", cudart], "cuda_app", shared=False,
                        args=["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/lib"])
    return ElfStandIns(cublas, cudart, cudnn, cufft, driver, torch_cuda, c10_cuda, torch_python, torch_c,
                       cuda_app)


VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '{version}'
debug = False
cuda: Optional[str] = {cuda!r}
git_version = '0123456789abcdef'
hip: Optional[str] = {hip!r}
"""


def write_version_py(torch_dir: Path, *, version: str, cuda: str | None, hip: str | None) -> None:
    torch_dir.mkdir(parents=True, exist_ok=True)
    (torch_dir / "version.py").write_text(VERSION_PY.format(version=version, cuda=cuda, hip=hip))
    (torch_dir / "__init__.py").write_text("raise ImportError('the fake torch must never be imported')\n")


def _place(src: Path, folder: Path, name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dst = folder / (name or src.name)
    shutil.copy2(src, dst)
    return dst


@pytest.fixture
def fake_torch(tmp_path: Path, elf_stand_ins: ElfStandIns) -> FakeTorch:
    """site-packages/{torch/{version.py,_C*.so,lib/*.so}, nvidia/{cu13,cudnn}/lib} and an extra dir."""
    s = elf_stand_ins
    sp = tmp_path / "site-packages"
    torch_dir = sp / "torch"
    write_version_py(torch_dir, version="2.14.1+cu130", cuda="13.0", hip=None)
    _place(s.torch_c, torch_dir)
    for lib in (s.torch_python, s.torch_cuda, s.c10_cuda):
        _place(lib, torch_dir / "lib")
    for lib in (s.cublas, s.cudart):
        _place(lib, sp / "nvidia" / "cu13" / "lib")
    _place(s.cudnn, sp / "nvidia" / "cudnn" / "lib")
    extra = tmp_path / "extra"
    _place(s.cufft, extra)
    _place(s.driver, extra)
    return FakeTorch(site_packages=sp, torch_dir=torch_dir, extra_dir=extra)
