"""Windows HIP SDK conflicts that crash or break a ZLUDA launch, found before it starts.

Pure functions over a root (:class:`~zluda_runner.host.fs.HostFs`: absolute Windows paths map under
a fake root in tests) and an environment mapping; nothing is loaded or run, only names, small text
files and PE import tables are read (bounded: :data:`MAX_SDKS` folders, :data:`MAX_MATH_DLLS` DLLs
per SDK, :data:`MAX_PATH_ENTRIES` PATH entries).

* Several HIP SDKs: the AMD HIP SDK installer sets ``HIP_PATH`` (the newest install) and
  ``HIP_PATH_<major><minor>`` (``HIP_PATH_62``, ``HIP_PATH_64``, ``HIP_PATH_70`` ...). Several of them
  naming different versions, a variable whose folder is another version or gone, or PATH taking the
  HIP DLLs from another SDK than the one the launch uses (:func:`find_host_hip`'s pick, the one every
  command reads) mix DLLs of two SDKs in one process.
* A HIP runtime mix: a ZLUDA release built for ``amdhip64_7.dll`` on a host whose math libraries
  (rocBLAS, hipBLASLt, MIOpen in the SDK's ``bin``) import ``amdhip64_6.dll`` loads two HIP runtimes
  (mixed 6.4/7 installs crash: vosen/ZLUDA#579). upstream v6's ``nvcuda.dll`` delay-loads
  ``amdhip64_7.dll`` and only falls back to ``amdhip64_6.dll`` when that fails to load
  (vosen/ZLUDA ``ext/hip_runtime-sys/build.rs``@8a7931be: ``/DELAYLOAD:amdhip64_7.dll``;
  ``zluda/src/os_win.rs``@3fe12063: ``delay_load_downgrade_amdhip``).
* rocBLAS kernels: ``<sdk>\\bin\\rocblas\\library\\TensileLibrary*gfxNNNN*`` per GPU target; an SDK
  without the GPU's files fails every matrix multiply.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Literal

from zluda_runner.binfmt.filecache import cached_read
from zluda_runner.binfmt.pe import read_pe
from zluda_runner.core.errors import BinaryFormatError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.host.fs import HostFs
from zluda_runner.host.hipversion import FolderVersion, find_host_hip, folder_version, install_words
from zluda_runner.host.libraries import (
    files_for_gfx,
    find_library,
    kernel_folder,
    windows_path,
    windows_variable,
)

MAX_SDKS = 16
MAX_MATH_DLLS = 32
MAX_PATH_ENTRIES = 256
_HIP_VAR = re.compile(r"^HIP_PATH(?:_(\d)(\d+))?$", re.IGNORECASE)
_HIP_DLL = re.compile(r"^amdhip64(?:_(\d+))?\.dll$", re.IGNORECASE)
# The math libraries ZLUDA's DLLs load from the SDK's bin (each imports the SDK's own amdhip64).
_MATH_DLL = re.compile(
    r"^(rocblas|hipblaslt|hipblas|miopen|rocsparse|hipsparse|rocfft|hipfft|rocsolver|hipsolver)[\w.-]*\.dll$",
    re.IGNORECASE,
)
FIX_SOURCE = "vosen/ZLUDA#579"

Severity = Literal["warn", "fail"]
ConflictKind = Literal[
    "several-sdks", "variable-mismatch", "missing-folder", "path-order", "hip-runtime-mix", "rocblas-kernels"
]


@dataclass(frozen=True)
class HipSdk(JsonMixin):
    """One HIP SDK folder the environment names (or the Program Files\\AMD\\ROCm folder holds)."""

    path: str  # as named, without a trailing backslash
    variables: tuple[str, ...]  # HIP_PATH, HIP_PATH_64 ...; ("Program Files",) when found only there
    version: str | None  # "6.4"
    version_source: str
    exists: bool
    used: bool = False  # the SDK the launch uses (find_host_hip's pick)
    package: str | None = None  # the SDK's own number (its folder, HIP_PATH_NN) where found

    @property
    def bin(self) -> str:
        return f"{self.path}\\bin"

    @property
    def number(self) -> str | None:
        """The SDK's number as its installer names it (``ROCm\\6.4``, ``HIP_PATH_64``), else HIP's."""
        return self.package or self.version

    def label(self) -> str:
        words = install_words("hip-sdk", self.version, self.package)
        return f"{words} at {self.path} ({', '.join(self.variables)})"


@dataclass(frozen=True)
class Conflict(JsonMixin):
    """One conflict, named with its fix."""

    kind: ConflictKind
    severity: Severity
    message: str
    fix: str


@dataclass(frozen=True)
class MathLibrary(JsonMixin):
    name: str
    hip_dlls: tuple[str, ...]  # the amdhip64*.dll it imports (static or delay-load)


# --------------------------------------------------------------------------- the SDK folders


def _clean(raw: str) -> str:
    return raw.strip().strip('"').rstrip("\\/")


def _key(path: str) -> str:
    return str(PureWindowsPath(_clean(path))).lower()


def _folder_version(fs: HostFs, path: str, variables: Sequence[str]) -> FolderVersion:
    """As :func:`~zluda_runner.host.hipversion.find_host_hip` reads it (:func:`folder_version`: the SDK's
    ``include\\hip\\hip_version.h``, its ``amdhip64_N.dll``, then the folder name or a ``HIP_PATH_NN``)."""
    how = next((v for v in variables if _variable_version(v)), "")  # a last resort: it is what is checked
    found = folder_version(fs, path, windows=True) or folder_version(fs, path, windows=True, how=how)
    return found or FolderVersion(None, "version not in the folder name")


def _variable_version(var: str) -> str | None:
    m = _HIP_VAR.match(var)
    return f"{m.group(1)}.{m.group(2)}" if m and m.group(1) else None


def _var_order(var: str) -> tuple[int, tuple[int, ...]]:
    return (0 if var.upper() == "HIP_PATH" else 1, tuple(-int(x) for x in re.findall(r"\d+", var)))


def find_sdks(root: Path | None, env: Mapping[str, str]) -> tuple[HipSdk, ...]:
    """Every HIP SDK folder named by ``HIP_PATH`` / ``HIP_PATH_NN`` or found in Program Files\\AMD\\ROCm,
    one record per folder (names compared as Windows compares them), the used one marked."""
    fs = HostFs(root)
    named: dict[str, tuple[str, list[str]]] = {}
    hip_vars = sorted((k for k, v in env.items() if _HIP_VAR.match(k) and _clean(v)), key=_var_order)
    for var in hip_vars:
        path = _clean(env[var])
        named.setdefault(_key(path), (path, []))[1].append(var.upper())
    program_files = windows_variable(env, "ProgramFiles") or r"C:\Program Files"
    base = f"{program_files}\\AMD\\ROCm"
    installed = [n for n in fs.names(base) if fs.is_dir(f"{base}\\{n}")][:MAX_SDKS]
    for name in installed:
        path = f"{base}\\{name}"
        named.setdefault(_key(path), (path, []))
    chosen = find_host_hip(root, {k: v for k, v in env.items() if v}, "win32")
    used_key = _key(chosen.path) if chosen is not None else None
    sdks: list[HipSdk] = []
    for key, (path, variables) in list(named.items())[:MAX_SDKS]:
        found = _folder_version(fs, path, variables)
        sdks.append(HipSdk(path, tuple(variables) or ("Program Files",), found.version, found.source,
                           fs.is_dir(path), used=key == used_key, package=found.package))
    return tuple(sdks)


def used_sdk(sdks: Iterable[HipSdk]) -> HipSdk | None:
    return next((s for s in sdks if s.used), None)


# --------------------------------------------------------------------------- several SDKs


def sdk_conflicts(sdks: Sequence[HipSdk], env: Mapping[str, str]) -> tuple[Conflict, ...]:
    """Several SDK versions, a ``HIP_PATH_NN`` naming another version or a missing folder, and PATH taking
    HIP's DLLs from another SDK than the one the launch uses."""
    out: list[Conflict] = []
    used = used_sdk(sdks)
    present = [s for s in sdks if s.exists]
    for sdk in sdks:
        if not sdk.exists and sdk.variables != ("Program Files",):
            names = " and ".join(sdk.variables)
            out.append(Conflict("missing-folder", "warn", f"{names} names {sdk.path}, which does not exist",
                                f"Delete {names} from the environment (left by an uninstall), or reinstall "
                                "that HIP SDK."))
            continue
        for var in sdk.variables:
            claimed = _variable_version(var)
            if sdk.exists and claimed and sdk.number and claimed != sdk.number:
                out.append(Conflict(
                    "variable-mismatch", "warn",
                    f"{var} says HIP SDK {claimed} but names the HIP SDK {sdk.number} folder {sdk.path}",
                    f"Point {var} at the HIP SDK {claimed} folder, or delete {var} if {claimed} is not "
                    "installed."))
    versions = {s.number for s in present if s.number}
    if len(versions) > 1:
        others = [s for s in present if not s.used]
        if used is not None:
            head = f"the launch uses {used.label()}"
        else:
            head = "none of them is the one the launch uses"
        other_text = "; ".join(s.label() for s in others)
        disagree = [s for s in others if used is None or s.number != used.number]
        what = ", ".join(f"HIP SDK {s.number}" for s in disagree if s.number) or "the others"
        keep = f"HIP SDK {used.number}" if used is not None and used.number else "one SDK"
        out.append(Conflict(
            "several-sdks", "warn",
            f"{len(present)} HIP SDKs of different versions are installed: {head}; also {other_text}",
            f"Keep {keep}: uninstall {what} (or delete their HIP_PATH_NN variables and take their bin "
            "folders off PATH), so every library loads DLLs of one SDK."))
    if used is not None and used.exists:
        bins = {_key(s.bin): s for s in present}
        first = next((bins[_key(p)] for p in windows_path(env)[:MAX_PATH_ENTRIES] if _key(p) in bins), None)
        if first is not None and not first.used:
            out.append(Conflict(
                "path-order", "warn",
                f"PATH lists {first.bin} (HIP SDK {first.number}) before {used.bin}: Windows loads "
                "HIP's DLLs "
                f"from HIP SDK {first.number} while the launch uses HIP SDK {used.number}",
                f"Put {used.bin} before {first.bin} on PATH (or take {first.bin} off it)."))
    return tuple(out)


# --------------------------------------------------------------------------- the HIP runtime mix


def hip_dll_imports(path: Path) -> tuple[str, ...]:
    """The ``amdhip64*.dll`` names a PE file imports (load time and delay-load), lower case; () if
    unreadable."""
    try:
        info = read_pe(path, exports=False)
    except (BinaryFormatError, OSError):
        return ()
    names = {n.lower() for n in (*info.imports, *info.delay_imports) if _HIP_DLL.match(n)}
    return tuple(sorted(names))


@dataclass(frozen=True)
class HipImports(JsonMixin):
    dlls: tuple[str, ...]


def _read_hip_imports(path: Path) -> HipImports:
    return HipImports(hip_dll_imports(path))


_read_hip_imports.cache_version = 1  # type: ignore[attr-defined]


def _hip_imports(path: Path, cache_dir: Path | None) -> tuple[str, ...]:
    """:func:`hip_dll_imports`, kept per file (path, size, mtime) under ``cache_dir`` when given: a cached
    launch reads no import table again."""
    return cached_read(path, "hip-imports", _read_hip_imports, cache_dir, HipImports).dlls


def math_libraries(root: Path | None, sdk: HipSdk, cache_dir: Path | None = None) -> tuple[MathLibrary, ...]:
    """The SDK's math libraries (rocBLAS, hipBLASLt, MIOpen ... in ``bin``) and the HIP DLLs they import."""
    fs = HostFs(root)
    folder = fs.path(sdk.bin)
    names = [n for n in fs.names(sdk.bin) if _MATH_DLL.match(n) and fs.is_file_real(str(folder / n))]
    return tuple(MathLibrary(n, _hip_imports(folder / n, cache_dir)) for n in names[:MAX_MATH_DLLS])


def release_dlls(folder: Path) -> list[Path]:
    """The DLLs at the top of a release folder (its shims and launch DLLs; at most :data:`MAX_MATH_DLLS`)."""
    try:
        found = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".dll" and p.is_file())
    except OSError:
        return []
    return found[:MAX_MATH_DLLS]


def release_hip_dlls(dlls: Iterable[str | Path], cache_dir: Path | None = None) -> tuple[str, ...]:
    """The ``amdhip64*.dll`` names a release's DLLs import (its shims; at most :data:`MAX_MATH_DLLS`)."""
    found: set[str] = set()
    for path in list(dict.fromkeys(str(d) for d in dlls if str(d).lower().endswith(".dll")))[:MAX_MATH_DLLS]:
        found.update(_hip_imports(Path(path), cache_dir))
    return tuple(sorted(found))


def _major(dll: str) -> str:
    m = _HIP_DLL.match(dll)
    return m.group(1) if m and m.group(1) else "5"  # amdhip64.dll: the HIP 5 SDK's name


def runtime_mix(root: Path | None, env: Mapping[str, str], sdk: HipSdk,
                release_dlls: Sequence[str], cache_dir: Path | None = None) -> Conflict | None:
    """The release's HIP runtime against the one the SDK's math libraries import (None: no mix)."""
    libraries = [lib for lib in math_libraries(root, sdk, cache_dir) if lib.hip_dlls]
    if not libraries or not release_dlls:
        return None
    wanted = sorted(release_dlls, key=_major, reverse=True)[0]  # the one it loads when it is there
    mixed = [lib for lib in libraries if wanted not in lib.hip_dlls]
    if not mixed:
        return None
    theirs = sorted({d for lib in mixed for d in lib.hip_dlls})
    names = ", ".join(f"{lib.name} ({', '.join(lib.hip_dlls)})" for lib in mixed[:6])
    found = find_library(wanted, env, "win32", fs=HostFs(root), path_prepend=(sdk.bin,)).path
    where = f"{wanted} is on this host ({found})" if found else f"no {wanted} was found on this host"
    severity: Severity = "fail" if found else "warn"
    consequence = ("two HIP runtimes load into one process and the workload crashes"
                   if found else "the release runs only where it falls back to their HIP runtime")
    return Conflict(
        "hip-runtime-mix", severity,
        f"the ZLUDA release is built for {wanted}, but {install_words('hip-sdk', sdk.version, sdk.package)} "
        f"at {sdk.path} has math "
        f"libraries that load {' / '.join(theirs)}: {names}; {where}: {consequence} (mixed 6.4/7 "
        f"installs: {FIX_SOURCE})",
        f"Install HIP SDK {_major(wanted)}.x (its rocBLAS/hipBLASLt/MIOpen load {wanted}) and put its bin "
        "first "
        f"on PATH, or choose a ZLUDA release built for {theirs[0]} (`zluda-run releases`)."
    )


# --------------------------------------------------------------------------- rocBLAS kernels


def _kernels(sdk: HipSdk) -> str:
    return kernel_folder(f"{sdk.bin}\\rocblas.dll", "rocblas")


@dataclass(frozen=True)
class KernelFacts(JsonMixin):
    sdk: HipSdk
    files: int  # TensileLibrary files built for the GPU target


def rocblas_kernels(root: Path | None, sdks: Sequence[HipSdk], gfx: str) -> tuple[KernelFacts, ...]:
    fs = HostFs(root)
    return tuple(KernelFacts(s, len(files_for_gfx(fs, _kernels(s), gfx, "TensileLibrary")))
                 for s in sdks if s.exists)


def kernel_conflict(facts: Sequence[KernelFacts], gfx: str) -> Conflict | None:
    """The used SDK without rocBLAS kernels for ``gfx`` (naming another SDK that has them, if one does)."""
    used = next((f for f in facts if f.sdk.used), None)
    if used is None or used.files:
        return None
    library = _kernels(used.sdk)
    having = [f.sdk for f in facts if f.files and not f.sdk.used]
    if having:
        other = having[0]
        fix = (f"{other.label()} has them: set HIP_PATH to {other.path} and put {other.bin} first on PATH, "
               "or copy "
               f"its TensileLibrary*{gfx}* files into {library}.")
    else:
        fix = (f"Put rocBLAS kernels built for {gfx} into {library} (a HIP SDK release that lists {gfx}, "
               "or a "
               f"community rocBLAS library package for {gfx}).")
    return Conflict("rocblas-kernels", "fail",
                    f"{used.sdk.label()} has no rocBLAS kernels for {gfx} in {library} "
                    "(TensileLibrary files): matrix multiplies will fail", fix)


# --------------------------------------------------------------------------- for the plan


def plan_warnings(root: Path | None, env: Mapping[str, str], release_dlls: Iterable[str | Path],
                  gfx: str | None = None, cache_dir: Path | None = None) -> list[str]:
    """Every conflict of a Windows launch, each as one warning line with its fix (``gfx``: the GPU target,
    when known; ``cache_dir``: where the DLLs' import tables are kept between launches)."""
    sdks = find_sdks(root, env)
    conflicts = list(sdk_conflicts(sdks, env))
    used = used_sdk(sdks)
    if used is not None and used.exists:
        mix = runtime_mix(root, env, used, release_hip_dlls(release_dlls, cache_dir), cache_dir)
        if mix is not None:
            conflicts.append(mix)
        if gfx:
            missing = kernel_conflict(rocblas_kernels(root, sdks, gfx), gfx)
            if missing is not None:
                conflicts.append(missing)
    return [f"{c.message} (fix: {c.fix})" for c in conflicts]
