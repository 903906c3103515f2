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

from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.errors import PlanError
from zluda_runner.core.families import parse_library_name
from zluda_runner.core.serial import JsonMixin

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


@dataclass
class ShimFile(JsonMixin):
    """One file of a release that stands in for a CUDA library."""

    path: str
    family: str
    cuda_major: int | None
    load_names: list[str]
    recognised_by: str  # "manifest" | "name" | "symbols"
    needs_env: dict[str, str] = field(default_factory=dict)
    original_saved_as: str | None = None
    stub: str | None = None  # a stand-in by name only: what fails, and the source that says so


@dataclass
class ReleaseLayout(JsonMixin):
    """What a release folder offers: shims, launchers, a tracer."""

    root: str
    os: str  # "linux" | "windows"
    shims: list[ShimFile] = field(default_factory=list)
    launchers: dict[str, str] = field(default_factory=dict)  # kind -> path
    tracer_dir: str | None = None
    renames_from: str | None = None  # a --zluda-dir folder read with this manifest asset's file list

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
            hint=f"pass --zluda-dir the folder of one release, e.g. --zluda-dir {holders[0]}",
        )
    return holders[0] if holders else root


def _family_by_symbols(path: Path) -> str | None:
    from zluda_runner.binfmt.elf import read_elf

    try:
        info = read_elf(path)
    except Exception:  # not an ELF we can read: not a shim
        return None
    exported = {s.name for s in info.exports}
    return next((fam for marker, fam in _FAMILY_MARKERS if marker in exported), None)


def _family_by_pe_exports(path: Path) -> str | None:
    from zluda_runner.binfmt.pe import read_pe

    try:
        info = read_pe(path)
    except Exception:
        return None
    exported = {e for e in info.exports if isinstance(e, str)}
    return next((fam for marker, fam in _FAMILY_MARKERS if marker in exported), None)


def _tracer_dir(root: Path) -> str | None:
    for name in ("trace", "zluda_trace", "dump"):
        cand = root / name
        if cand.is_dir() and any(cand.iterdir()):
            return str(cand)
    return None


def _launchers(root: Path) -> dict[str, str]:
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
        how = "name"
        is_dll = name.lower().endswith(".dll")
        is_so = ".so" in name
        if not (is_dll or is_so):
            continue
        if family is None or (is_so and parsed is not None and parsed.major is None and family != "driver"):
            # libnvcuda.so, libzluda_*.so, an unversioned lib*.so: ask the exports.
            by_symbols = _family_by_pe_exports(path) if is_dll else _family_by_symbols(path)
            if by_symbols is None:
                continue
            family, how = by_symbols, "symbols"
        os_votes["windows" if is_dll else "linux"] += 1
        real = path.resolve()
        load_names = [name] if name == real.name else [real.name, name]
        cuda_major = cuda_major_of(family, parsed.major if parsed else None)
        key = str(real)
        if key in by_path and by_path[key].family == family:
            # libcuda.so -> libcuda.so.1: one file, several names.
            if name not in by_path[key].load_names:
                by_path[key].load_names.append(name)
            continue
        by_path[key] = ShimFile(
            path=str(real), family=family, cuda_major=cuda_major, load_names=load_names, recognised_by=how
        )
    host_os = "windows" if os_votes["windows"] > os_votes["linux"] else "linux"
    return list(by_path.values()), host_os


def scan_release_dir(root: Path, *, manifest: object | None = None) -> ReleaseLayout:
    """Recognise the shims in a folder of unknown provenance (``--zluda-dir``).

    A folder holding every file of a manifest asset that ships un-renamed files (the fork's
    ``cublas.dll``, placed as ``cublas64_11.dll``) is read with that asset's file list, through
    :func:`shims_of_files` as a release from the manifest is: the same names, CUDA majors, saved
    originals and environment. ``manifest``: a loaded :class:`~zluda_runner.release.model.Manifest`
    (default: the packaged one)."""
    root = Path(root)
    if not root.is_dir():
        raise PlanError(
            f"ZLUDA folder {root} does not exist or is not a folder",
            hint="pass --zluda-dir the folder you unpacked (the one holding libcuda.so.1 or nvcuda.dll)",
        )
    folder = _release_folder(root)
    shims, host_os = _recognise(folder)
    if not any(s.family == "driver" for s in shims):
        raise PlanError(
            f"{root} does not look like a ZLUDA release: no driver library "
            "(libcuda.so.1 / libcuda.so / nvcuda.dll) in it or in a sub-folder of it",
            hint="point --zluda-dir at the folder that holds ZLUDA's libcuda.so.1 (Linux) or nvcuda.dll "
            "(Windows), or drop --zluda-dir to use a release from the manifest",
        )
    matched = matching_asset(folder, _manifest_or_packaged(manifest))
    if matched is not None:
        release_id, asset = matched
        layout = _layout_of_asset(folder, asset)
        layout.renames_from = f"{release_id}/{getattr(asset, 'name', '?')}"
        return layout
    return ReleaseLayout(
        root=str(folder), os=host_os, shims=shims, launchers=_launchers(folder),
        tracer_dir=_tracer_dir(folder),
    )


def _manifest_or_packaged(manifest: object | None) -> object | None:
    if manifest is not None:
        return manifest
    from zluda_runner.core.errors import ZludaRunnerError
    from zluda_runner.release.manifest import load_manifest

    try:
        return load_manifest()
    except ZludaRunnerError:  # a broken packaged manifest only costs the rename map
        return None


def _renames(asset: object) -> bool:
    """Does the asset ship a file under a name other than the one it is loaded under?"""
    return any(Path(f.path).name.lower() not in {n.lower() for n in f.load_names}
               for f in getattr(asset, "files", []) if f.load_names)


def matching_asset(folder: Path, manifest: object | None) -> tuple[str, object] | None:
    """The manifest asset whose file list ``folder`` holds in full (every file not marked optional,
    every launcher), among those that rename files; the one with the most files present wins, the
    first in the manifest on a tie. None when none does (a self-built or unknown release)."""
    best: tuple[int, str, object] | None = None
    for release in getattr(manifest, "releases", []) if manifest is not None else []:
        for asset in release.assets:
            files = getattr(asset, "files", [])
            if not files or not _renames(asset):
                continue
            present = [f for f in files if (folder / f.path).is_file()]
            if any(not f.optional and not any(p is f for p in present) for f in files):
                continue
            launchers = getattr(asset, "launchers", [])
            if not all((folder / launcher.path).exists() for launcher in launchers):
                continue
            score = len(present) + len(launchers)
            if best is None or score > best[0]:
                best = (score, release.id, asset)
    return (best[1], best[2]) if best is not None else None


def shims_of_files(root: Path, files: list[object]) -> tuple[list[ShimFile], list[str]]:
    """The shims a manifest file list describes under ``root`` (the one rename map, used for a manifest
    release and for a ``--zluda-dir`` folder that matches an asset), and the listed files missing."""
    shims: list[ShimFile] = []
    missing: list[str] = []
    for f in files:
        path = root / getattr(f, "path", "")
        if not path.exists():
            if not getattr(f, "optional", False):
                missing.append(getattr(f, "path", ""))
            continue
        shims.append(
            ShimFile(
                path=str(path),
                family=getattr(f, "family", ""),
                cuda_major=getattr(f, "cuda_major", None),
                load_names=list(getattr(f, "load_names", [])) or [path.name],
                recognised_by="manifest",
                needs_env=dict(getattr(f, "needs_env", {}) or {}),
                original_saved_as=getattr(f, "original_saved_as", None),
                stub=stub_text(f),
            )
        )
    return shims, missing


def layout_from_manifest(root: Path, asset: object) -> ReleaseLayout:
    """The layout the manifest describes for ``asset`` unpacked at ``root``; files must exist."""
    shims, missing = shims_of_files(root, getattr(asset, "files", []))
    if missing or not shims:
        # The manifest's file list is not verified for every asset: fall back to recognition.
        scanned = scan_release_dir(root)
        scanned.os = getattr(asset, "os", scanned.os)
        return scanned
    return _layout_of_asset(root, asset)


def _layout_of_asset(root: Path, asset: object) -> ReleaseLayout:
    shims, _ = shims_of_files(root, getattr(asset, "files", []))
    # The archive may hold more than the manifest lists (a newer cuBLASLt, say): recognise the rest.
    listed = {str(Path(s.path).resolve()) for s in shims}
    extra, _ = _recognise(root)
    shims.extend(s for s in extra if str(Path(s.path).resolve()) not in listed)
    launchers = {launcher.kind: str(root / launcher.path) for launcher in getattr(asset, "launchers", [])}
    launchers = {k: v for k, v in launchers.items() if Path(v).exists()}
    return ReleaseLayout(
        root=str(root),
        os=getattr(asset, "os", "linux"),
        shims=shims,
        launchers=launchers,
        tracer_dir=_tracer_dir(root),
    )


def stub_text(f: object) -> str | None:
    """For a manifest file that only stands in by name: what fails, with the source that says so."""
    if not getattr(f, "stub", False):
        return None
    reason = getattr(f, "stub_reason", "") or "its functions are unimplemented"
    source = getattr(f, "stub_source", None)
    return f"{reason} ({source.kind}: {source.ref})" if source is not None else reason
