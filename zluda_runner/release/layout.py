"""Recognise what a ZLUDA release folder holds: which file stands in for which CUDA library.

A folder comes either from the manifest (then its ``files`` list is the
authority: names, the CUDA major each file serves, the names it must be loaded
under) or from ``--zluda-dir`` (an unpacked or self-built ZLUDA of any known
generation). In the second case files are recognised by name
(``libcublas.so.13``, ``cublas64_12.dll``) and, where a name says nothing
(``libnvcuda.so``, the fork's un-renamed ``cublas.dll``), by the symbols the
file exports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from zluda_runner.core.errors import PlanError
from zluda_runner.core.families import parse_library_name
from zluda_runner.core.paths import real_path
from zluda_runner.core.serial import JsonMixin
from zluda_runner.release.forknames import FORK_FILES, FORK_INJECTOR, NOT_THE_FORK

if TYPE_CHECKING:
    from zluda_runner.release.model import Asset, ReleaseFile

# Sub-folders that hold tracers or dumps, not shims to bind; "32": the 32-bit builds a Windows release
# ships since v7 (32/nvcuda.dll, 32/nvapi.dll for 32-bit PhysX; vosen/ZLUDA docs/src/physx32.md): a 64-bit
# process can never load them, so nothing is ever placed from there.
_SKIP_DIRS = {"trace", "trace_nvidia", "dump", "dump_nvidia", "zluda_dump", "ComputeCache", "32"}

# Driver file names that say "driver" only by convention (the fork's un-renamed files).
_DRIVER_FILE_NAMES = {"libnvcuda.so", "nvcuda.dll"}

# Launch means a release may ship, by file name.
_LAUNCHER_NAMES = {
    "zluda_ld": "ld_audit",
    "libzluda_ld.so": "ld_audit",
    "zluda.exe": "injector",
    "zluda_with.exe": "injector",
    "zluda_redirect.dll": "redirect_dll",
}

# An exported symbol that tells a family when the file name does not.
_FAMILY_MARKERS: tuple[tuple[str, str], ...] = (
    ("cuGetProcAddress_v2", "driver"),
    ("cuInit", "driver"),
    ("nvmlInit_v2", "nvml"),
    ("cublasLtCreate", "cublasLt"),
    ("cublasCreate_v2", "cublas"),
    ("cusparseCreate", "cusparse"),
    ("cufftwPlan_1d", "cufftw"),
    ("fftw_plan_dft_1d", "cufftw"),
    ("cufftPlan1d", "cufft"),
    ("cudnnCreate", "cudnn"),
    ("ncclCommInitRank", "nccl"),
    ("nvrtcCreateProgram", "nvrtc"),
)

# Families whose number in a Linux file name is the library's own ABI major, not CUDA's.
_OWN_MAJOR_FAMILIES = {"driver", "nvml", "cudnn", "nccl", "cusparseLt"}
# For the others, the file major maps to the CUDA toolkit major it ships with.
_CUDA_MAJOR_BY_FILE_MAJOR: dict[str, dict[int, int]] = {
    "cublas": {11: 11, 12: 12, 13: 13},
    "cublasLt": {11: 11, 12: 12, 13: 13},
    "cufft": {10: 11, 11: 12, 12: 13},
    "cufftw": {10: 11, 11: 12, 12: 13},
    "cusparse": {11: 11, 12: 12},  # cusparse 12 is shared by CUDA 12 and 13
    "nvrtc": {11: 11, 12: 12, 13: 13},
    "cudart": {11: 11, 12: 12, 13: 13},
}


def cuda_major_of(family: str, file_major: int | None) -> int | None:
    """The CUDA toolkit major a library file belongs to, when its name tells."""
    if file_major is None or family in _OWN_MAJOR_FAMILIES:
        return None
    return _CUDA_MAJOR_BY_FILE_MAJOR.get(family, {}).get(file_major)


# How a shim was recognised: listed in the manifest (or the fork's names it lists: release/forknames), by its
# file name, or by the symbols it exports.
Recognition = Literal["manifest", "name", "symbols"]


@dataclass(frozen=True)
class ShimFile(JsonMixin):
    """One file of a release that stands in for a CUDA library."""

    path: str
    family: str
    cuda_major: int | None
    load_names: tuple[str, ...]
    recognised_by: Recognition
    needs_env: Mapping[str, str] = field(default_factory=dict)
    original_saved_as: str | None = None
    stub: str | None = None  # a stand-in by name only: what fails, and the source that says so


@dataclass(frozen=True)
class ReleaseLayout(JsonMixin):
    """What a release folder offers: shims, launchers, a tracer."""

    root: str
    os: str  # "linux" | "windows"
    shims: tuple[ShimFile, ...] = ()
    launchers: Mapping[str, str] = field(default_factory=dict)  # kind -> path
    tracer_dir: str | None = None

    def for_family(self, family: str) -> list[ShimFile]:
        return [s for s in self.shims if s.family == family]


def _files_in(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_file())
    except OSError:
        return []


def _has_driver_name(folder: Path) -> bool:
    for path in _files_in(folder):
        parsed = parse_library_name(path.name)
        if (parsed is not None and parsed.family == "driver") or path.name.lower() in _DRIVER_FILE_NAMES:
            return True
    return False


def _release_folder(root: Path) -> Path:
    """The one folder holding the release's libraries: ``root`` itself, or its single sub-folder that holds a
    driver library (an archive unpacked with its top folder, ``zluda/``). Never deeper, and never several:
    a folder of several releases (or of anything at all, like /tmp) must not mix their files."""
    if _has_driver_name(root):
        return root
    try:
        subdirs = sorted(d for d in root.iterdir() if d.is_dir() and d.name not in _SKIP_DIRS
                         and not d.name.startswith("."))
    except OSError:
        subdirs = []
    holders = [d for d in subdirs if _has_driver_name(d)]
    if len(holders) > 1:
        raise PlanError(
            f"{root} holds several ZLUDA-like folders ({', '.join(d.name for d in holders[:4])}): "
            "which one to use is not clear",
            hint=f"pass {{opt:zluda_dir}} the folder of one release, e.g. {{opt:zluda_dir {holders[0]}}}",
        )
    return holders[0] if holders else root


def _family_by_exports(path: Path, is_dll: bool) -> str | None:
    """The family a symbol ``path`` exports tells (a PE DLL's or an ELF's), for a name that does not."""
    from zluda_runner.binfmt.elf import read_elf
    from zluda_runner.binfmt.pe import read_pe

    try:
        exported = ({e for e in read_pe(path).exports if isinstance(e, str)} if is_dll
                    else {s.name for s in read_elf(path).exports})
    except Exception:  # not a file we can read: not a shim
        return None
    return next((fam for marker, fam in _FAMILY_MARKERS if marker in exported), None)


def _tracer_dir(root: Path) -> str | None:
    for name in ("trace", "zluda_trace", "dump"):
        cand = root / name
        if cand.is_dir() and any(cand.iterdir()):
            return str(cand)
    return None


def launchers_of(root: Path) -> dict[str, str]:
    """The launchers a release folder ships, by kind (``injector``: zluda.exe; ``ld_audit``: zluda_ld)."""
    out: dict[str, str] = {}
    for name, kind in _LAUNCHER_NAMES.items():
        cand = root / name
        if cand.is_file():
            out.setdefault(kind, str(cand))
    return out


def _recognise(folder: Path) -> tuple[list[ShimFile], str]:
    """The shims in ``folder`` recognised by name (or exports), and the OS they are built for."""
    by_path: dict[str, ShimFile] = {}
    os_votes = {"linux": 0, "windows": 0}
    for path in _files_in(folder):
        name = path.name
        parsed = parse_library_name(name)
        family = parsed.family if parsed else None
        how: Recognition = "name"
        is_dll = name.lower().endswith(".dll")
        is_so = ".so" in name
        if not (is_dll or is_so):
            continue
        if family is None or (is_so and parsed is not None and parsed.major is None and family != "driver"):
            # libnvcuda.so, libzluda_*.so, an unversioned lib*.so: ask the exports.
            by_symbols = _family_by_exports(path, is_dll)
            if by_symbols is None:
                continue
            family, how = by_symbols, "symbols"
        os_votes["windows" if is_dll else "linux"] += 1
        real = Path(real_path(path))
        load_names = (name,) if name == real.name else (real.name, name)
        cuda_major = cuda_major_of(family, parsed.major if parsed else None)
        key = str(real)
        if key in by_path and by_path[key].family == family:
            # libcuda.so -> libcuda.so.1: one file, several names.
            known = by_path[key]
            if name not in known.load_names:
                by_path[key] = replace(known, load_names=(*known.load_names, name))
            continue
        by_path[key] = ShimFile(
            path=str(real), family=family, cuda_major=cuda_major, load_names=load_names, recognised_by=how
        )
    host_os = "windows" if os_votes["windows"] > os_votes["linux"] else "linux"
    return list(by_path.values()), host_os


def scan_release_dir(root: Path) -> ReleaseLayout:
    """Recognise the shims in a folder of unknown provenance (``--zluda-dir``).

    A folder holding the fork's Windows DLLs, which ship un-renamed (``cublas.dll``, placed as
    ``cublas64_11.dll``), is read with the fork's file names (:mod:`zluda_runner.release.forknames`): the
    names, CUDA majors, saved originals and environment its manifest assets give; the manifest is not read."""
    root = Path(root)
    if not root.is_dir():
        raise PlanError(
            f"ZLUDA folder {root} does not exist or is not a folder",
            hint="pass {opt:zluda_dir} the folder you unpacked (the one holding libcuda.so.1 or nvcuda.dll)",
        )
    folder = _release_folder(root)
    shims, host_os = _recognise(folder)
    if not any(s.family == "driver" for s in shims):
        raise PlanError(
            f"{root} does not look like a ZLUDA release: no driver library "
            "(libcuda.so.1 / libcuda.so / nvcuda.dll) in it or in a sub-folder of it",
            hint="point {opt:zluda_dir} at the folder that holds ZLUDA's libcuda.so.1 (Linux) or nvcuda.dll "
            "(Windows), or drop {opt:zluda_dir} to use a release from the manifest",
        )
    fork = _fork_shims(folder)
    if fork is not None:
        return _with_recognised(folder, "windows", fork, launchers_of(folder))
    return ReleaseLayout(
        root=str(folder), os=host_os, shims=tuple(shims), launchers=launchers_of(folder),
        tracer_dir=_tracer_dir(folder),
    )


def _fork_shims(folder: Path) -> list[ShimFile] | None:
    """The shims of a folder holding the fork's Windows DLLs, read with the fork's file names
    (:mod:`zluda_runner.release.forknames`), each file it has by its name (an older or trimmed fork folder
    lacks cuFFT or NVRTC: those stay NVIDIA's); None for any other folder. The fork's folder: its injector
    (``zluda.exe``, not upstream v4/v5's ``zluda_with.exe``) beside an un-renamed CUDA library."""
    present = {name: f for name, f in FORK_FILES.items() if (folder / name).is_file()}
    if not (folder / FORK_INJECTOR).is_file() or (folder / NOT_THE_FORK).exists() or not any(
            f.cuda_major is not None for f in present.values()):
        return None
    return [ShimFile(str(folder / name), f.family, f.cuda_major, (f.load_name,), "manifest",
                     dict(f.needs_env), f.original_saved_as, f.stub) for name, f in present.items()]


def shim_of_file(path: Path, f: ReleaseFile) -> ShimFile:
    """The shim one manifest file describes, at ``path`` (where it is, or will be once unpacked)."""
    return ShimFile(
        path=str(path),
        family=f.family,
        cuda_major=f.cuda_major,
        load_names=tuple(f.load_names) or (path.name,),
        recognised_by="manifest",
        needs_env=dict(f.needs_env or {}),
        original_saved_as=f.original_saved_as,
        stub=stub_text(f),
    )


def shims_of_files(root: Path, files: Sequence[ReleaseFile]) -> tuple[list[ShimFile], list[str]]:
    """The shims a manifest file list describes under ``root`` (the one rename map, used for a manifest
    release and for a ``--zluda-dir`` folder that matches an asset), and the listed files missing."""
    shims: list[ShimFile] = []
    missing: list[str] = []
    for f in files:
        path = root / f.path
        if not path.exists():
            if not f.optional:
                missing.append(f.path)
            continue
        shims.append(shim_of_file(path, f))
    return shims, missing


def layout_from_manifest(root: Path, asset: Asset) -> ReleaseLayout:
    """The layout the manifest describes for ``asset`` unpacked at ``root``; files must exist."""
    shims, missing = shims_of_files(root, asset.files)
    if missing or not shims:
        # The manifest's file list is not verified for every asset: fall back to recognition.
        return replace(scan_release_dir(root), os=asset.os)
    return _with_recognised(root, asset.os, shims, {x.kind: str(root / x.path) for x in asset.launchers})


def _with_recognised(root: Path, os_name: str, shims: list[ShimFile],
                     launchers: Mapping[str, str]) -> ReleaseLayout:
    """The layout of ``shims`` as a file list names them; the archive may hold more than it lists (a newer
    cuBLASLt, say): the rest is recognised."""
    listed = {real_path(s.path) for s in shims}
    extra, _ = _recognise(root)
    shims.extend(s for s in extra if real_path(s.path) not in listed)
    return ReleaseLayout(root=str(root), os=os_name, shims=tuple(shims), tracer_dir=_tracer_dir(root),
                         launchers={k: v for k, v in launchers.items() if Path(v).exists()})


def stub_text(f: ReleaseFile) -> str | None:
    """For a manifest file that only stands in by name: what fails, with the source that says so."""
    if not f.stub:
        return None
    reason = f.stub_reason or "its functions are unimplemented"
    source = f.stub_source
    return f"{reason} ({source.kind}: {source.ref})" if source is not None else reason
