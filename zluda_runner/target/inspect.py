"""What a CUDA build (torch, or any CUDA binary) asks the loader for, and where it gets it.

The target's torch is found without importing it: a few lines run by the
target interpreter locate the package and hand back ``torch/version.py``'s text,
which is parsed here (never executed).  The binaries are then read (ELF or PE,
per-file results cached by path, size and mtime) and the loader is modelled:
on Linux glibc's rules as implemented by :mod:`zluda_runner.loader.glibc`, starting
from the extension module the interpreter ``dlopen``s; on Windows the DLL
search that applies to ``torch/lib`` (:mod:`zluda_runner.loader.windows`).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zluda_runner.binfmt.elf import ElfInfo, peek_elf_header, read_elf
from zluda_runner.binfmt.filecache import cached_read
from zluda_runner.binfmt.pe import PeInfo, is_pe, read_pe
from zluda_runner.core.errors import BinaryFormatError, TargetError
from zluda_runner.core.families import parse_library_name
from zluda_runner.core.paths import CachePaths
from zluda_runner.core.serial import JsonMixin
from zluda_runner.loader.glibc import LoadedObject, LoaderEnv, LoaderModel, LoadResult, Resolution
from zluda_runner.loader.windows import DllSearchModel

PROFILE_SCHEMA = 1
PROBE_TIMEOUT_S = 60
_PROBE_MARK = "ZLUDA_RUNNER_TARGET="

# Runs in the target interpreter (any Python >= 3.6): locate torch, never import it.
_PROBE_SCRIPT = r"""
import json, os, sys
out = {"executable": sys.executable, "version": sys.version.split()[0], "platform": sys.platform,
       "exec_prefix": sys.exec_prefix, "machine": None, "site_packages": [], "torch": None,
       "errors": []}
try:
    import platform
    out["machine"] = platform.machine()
except Exception as exc:
    out["errors"].append("platform: %r" % (exc,))
try:
    import site, sysconfig
    dirs = list(getattr(site, "getsitepackages", lambda: [])())
    if getattr(site, "ENABLE_USER_SITE", False):
        dirs.append(site.getusersitepackages())
    for key in ("purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p and p not in dirs:
            dirs.append(p)
    out["site_packages"] = dirs
except Exception as exc:
    out["errors"].append("site: %r" % (exc,))
spec = None
try:
    import importlib.util
    spec = importlib.util.find_spec("torch")
except Exception as exc:
    out["errors"].append("find_spec: %r" % (exc,))
if spec is not None:
    locs = list(spec.submodule_search_locations or [])
    torch_dir = locs[0] if locs else (os.path.dirname(spec.origin) if spec.origin else None)
    text = None
    if torch_dir:
        vp = os.path.join(torch_dir, "version.py")
        if os.path.isfile(vp):
            with open(vp, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
    out["torch"] = {"path": torch_dir, "version_py": text}
sys.stdout.write("ZLUDA_RUNNER_TARGET=" + json.dumps(out) + "\n")
"""

# Libraries opened at run time with dlopen/LoadLibrary by name, so no import table shows them.
# (family of the opener, name opened, why). cudart 12/13 dlopens the driver by its bare name
# (see shared/DESIGN.md); torch's c10/cuda/driver_api.cpp dlopens libcuda.so.1 and
# libnvidia-ml.so.1 itself.
_DLOPENED_BY_FAMILY: dict[str, list[tuple[str, str]]] = {
    "cudart": [("libcuda.so.1", "cudart loads the driver lazily by its bare name")],
}
_DLOPENED_BY_OBJECT: dict[str, list[tuple[str, str]]] = {
    "libc10_cuda.so": [
        ("libcuda.so.1", "torch's c10 driver API table"),
        ("libnvidia-ml.so.1", "torch's c10 caching allocator asks NVML for memory"),
    ],
}
_DLOPENED_WINDOWS_BY_FAMILY: dict[str, list[tuple[str, str]]] = {
    "cudart": [("nvcuda.dll", "cudart loads the driver lazily by its bare name")],
}

_PYTHON_NAME = re.compile(
    r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?[tdmu]*(?:-dbg)?(?:\.exe)?$|^pythonw(?:\.exe)?$", re.IGNORECASE
)


# --------------------------------------------------------------------------- data


@dataclass
class TorchInfo(JsonMixin):
    version: str | None
    cuda: str | None
    hip: str | None
    path: str | None
    git_version: str | None = None


@dataclass
class Resolved(JsonMixin):
    """Where the loader takes a library from: ``via`` is the rule, ``via_object`` whose rule."""

    path: str | None
    via: str
    via_object: str | None = None
    rule: str = ""
    tried: list[str] = field(default_factory=list)


@dataclass
class Reach(JsonMixin):
    """How one requesting object reaches a library on its own (ignoring what is already loaded)."""

    requester: str
    path: str | None
    via: str
    via_object: str | None
    rule: str


@dataclass
class LibraryNeed(JsonMixin):
    """One CUDA library name the build asks for."""

    name: str
    family: str
    major: int | None
    requested_by: list[str] = field(default_factory=list)
    versions_required: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    resolved: Resolved | None = None
    reach: list[Reach] = field(default_factory=list)


@dataclass
class DlopenNeed(JsonMixin):
    """A library opened at run time by name (not in any import table)."""

    name: str
    family: str
    opened_by: list[str]
    reason: str
    resolved: Resolved | None = None


@dataclass
class ObjectInfo(JsonMixin):
    path: str
    format: str  # "elf" | "pe"
    soname: str | None = None
    needed: list[str] = field(default_factory=list)
    rpath: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)


@dataclass
class TargetProfile(JsonMixin):
    """What a CUDA build needs, under which names, found where."""

    schema: int = PROFILE_SCHEMA
    python: str | None = None
    python_version: str | None = None
    os: str = "linux"
    site_packages: list[str] = field(default_factory=list)
    torch: TorchInfo | None = None
    build: str = "none"  # "cuda" | "rocm" | "cpu" | "none"
    cuda_version: str | None = None
    cuda_major: int | None = None
    roots: list[str] = field(default_factory=list)
    libraries: list[LibraryNeed] = field(default_factory=list)
    objects: list[ObjectInfo] = field(default_factory=list)
    dlopened: list[DlopenNeed] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def library(self, name: str) -> LibraryNeed | None:
        return next((lib for lib in self.libraries if lib.name == name), None)

    def by_family(self) -> dict[str, list[LibraryNeed]]:
        out: dict[str, list[LibraryNeed]] = {}
        for lib in self.libraries:
            out.setdefault(lib.family, []).append(lib)
        return out


# --------------------------------------------------------------------------- interpreter


def interpreter_for_command(argv: Sequence[str]) -> str | None:
    """The Python interpreter a workload command runs, or None if it is not a Python command.

    ``python``, ``python3.11``, a path to a venv's python, or a script (found on
    PATH or by path) whose ``#!`` line names a Python interpreter.
    """
    if not argv:
        return None
    first = argv[0]
    exe = _which(first)
    if _PYTHON_NAME.match(Path(first).name):
        return exe
    if exe is None:
        return None
    interp = _shebang_interpreter(Path(exe))
    if interp and _PYTHON_NAME.match(Path(interp).name):
        return _which(interp)
    return None


def _which(cmd: str) -> str | None:
    if os.sep in cmd or (os.altsep and os.altsep in cmd):
        p = Path(cmd).expanduser()
        return str(p.absolute()) if p.is_file() else None
    return shutil.which(cmd)


def _shebang_interpreter(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        return rest[0] if rest else None
    return words[0]


@dataclass
class InterpreterFacts(JsonMixin):
    executable: str
    version: str
    platform: str
    exec_prefix: str
    machine: str | None
    site_packages: list[str]
    torch_path: str | None
    torch_version_py: str | None
    errors: list[str]


def probe_interpreter(python: str, *, env: Mapping[str, str] | None = None) -> InterpreterFacts:
    """Run the locating script with ``python``; :class:`TargetError` if it cannot run."""
    exe = _which(python) or python
    try:
        proc = subprocess.run(
            [exe, "-c", _PROBE_SCRIPT],
            capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False,
            env=dict(env) if env is not None else None, stdin=subprocess.DEVNULL,
        )
    except (OSError, ValueError) as exc:
        raise TargetError(
            f"the interpreter {python} does not run: {getattr(exc, 'strerror', None) or exc}",
            hint="pass --python with the path of the Python that runs your workload "
            "(e.g. .venv/bin/python)",
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise TargetError(
            f"the interpreter {python} did not answer within {PROBE_TIMEOUT_S} s",
            hint="check that it starts (run it with -c pass) or pass another --python",
        ) from exc
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(_PROBE_MARK)), None)
    if proc.returncode != 0 or line is None:
        tail = " / ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:]) or "no output"
        raise TargetError(
            f"the interpreter {python} does not run (exit {proc.returncode}): {tail}",
            hint="pass --python with a working Python interpreter (3.8 or newer) that has torch installed",
        )
    try:
        data = json.loads(line[len(_PROBE_MARK):])
    except json.JSONDecodeError as exc:
        raise TargetError(f"the interpreter {python} answered garbage", hint="pass another --python") from exc
    torch = data.get("torch") or {}
    return InterpreterFacts(
        executable=data.get("executable") or exe,
        version=data.get("version", "?"),
        platform=data.get("platform", "?"),
        exec_prefix=data.get("exec_prefix", ""),
        machine=data.get("machine"),
        site_packages=list(data.get("site_packages") or []),
        torch_path=torch.get("path"),
        torch_version_py=torch.get("version_py"),
        errors=list(data.get("errors") or []),
    )


# --------------------------------------------------------------------------- torch/version.py


def parse_torch_version(text: str, *, where: str = "torch/version.py") -> dict[str, str | None]:
    """Top-level constant assignments of ``torch/version.py`` (parsed, never executed)."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise TargetError(f"{where} cannot be parsed: {exc}",
                          hint="the torch install is damaged; reinstall it") from exc
    found: dict[str, str | None] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if (isinstance(target, ast.Name) and isinstance(value, ast.Constant)
                and (value.value is None or isinstance(value.value, str))):
            found[target.id] = value.value
    return found


def torch_info(torch_dir: Path, version_text: str | None = None) -> TorchInfo:
    if version_text is None:
        vp = torch_dir / "version.py"
        try:
            version_text = vp.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise TargetError(
                f"{torch_dir} has no readable version.py",
                hint="the torch install is damaged or not a torch package; reinstall torch",
            ) from exc
    fields = parse_torch_version(version_text, where=str(torch_dir / "version.py"))
    return TorchInfo(
        version=fields.get("__version__"),
        cuda=fields.get("cuda"),
        hip=fields.get("hip"),
        path=str(torch_dir),
        git_version=fields.get("git_version"),
    )


def check_cuda_build(info: TorchInfo, where: str) -> None:
    """:class:`TargetError` unless this torch is a CUDA build (ZLUDA has nothing to do otherwise)."""
    if info.hip:
        raise TargetError(
            f"torch {info.version} at {where} is a ROCm build (HIP {info.hip}): it runs on AMD GPUs "
            "natively and needs no ZLUDA",
            hint="run it directly; to compare it with a CUDA build under ZLUDA use "
            "`zluda-run ab --b-python <rocm python> -- <script>`",
        )
    if not info.cuda:
        raise TargetError(
            f"torch {info.version} at {where} is a CPU-only build: there is nothing for ZLUDA to run",
            hint="install a CUDA build of torch in this interpreter (PyPI's Linux wheels are CUDA builds; "
            "on Windows use https://download.pytorch.org/whl/cu118), or pass --python for one that has it",
        )


# --------------------------------------------------------------------------- entry points


def inspect_python(python: str, *, cache_dir: Path | None = None,
                   env: Mapping[str, str] | None = None) -> TargetProfile:
    """Profile the torch of interpreter ``python`` as a workload run with ``env`` would load it."""
    facts = probe_interpreter(python, env=env)
    if facts.torch_path is None:
        raise TargetError(
            f"there is no torch in {facts.executable} (Python {facts.version})",
            hint="install a CUDA build of torch there, or pass --python for the interpreter your "
            "workload uses",
        )
    torch_dir = Path(facts.torch_path)
    info = torch_info(torch_dir, facts.torch_version_py)
    check_cuda_build(info, facts.executable)
    profile = _new_profile(info)
    profile.python = facts.executable
    profile.python_version = facts.version
    profile.site_packages = facts.site_packages
    profile.warnings.extend(f"target interpreter: {e}" for e in facts.errors)
    if facts.platform == "win32" or _has_dlls(torch_dir):
        _fill_windows(profile, torch_dir, cache_dir, exec_prefix=Path(facts.exec_prefix))
    else:
        _fill_linux_torch(profile, torch_dir, cache_dir, env)
    return profile


def inspect_path(path: Path, *, cache_dir: Path | None = None,
                 env: Mapping[str, str] | None = None) -> TargetProfile:
    """Profile a torch folder, a site-packages holding torch, or one ELF/PE binary."""
    p = Path(path).expanduser()
    if not p.exists():
        raise TargetError(f"{p} does not exist", hint="pass a torch folder, a site-packages or a binary")
    if p.is_file():
        return _inspect_binary(p, cache_dir, env)
    torch_dir = p if (p / "version.py").is_file() and (p / "lib").is_dir() else p / "torch"
    if not (torch_dir / "version.py").is_file():
        raise TargetError(
            f"{p} is neither a torch folder nor a site-packages with torch in it",
            hint="pass <site-packages>/torch, a site-packages folder, a single .so/.dll, or --python",
        )
    info = torch_info(torch_dir)
    check_cuda_build(info, str(torch_dir))
    profile = _new_profile(info)
    profile.site_packages = [str(torch_dir.parent)]
    if _has_dlls(torch_dir):
        _fill_windows(profile, torch_dir, cache_dir, exec_prefix=_windows_prefix(torch_dir))
    else:
        _fill_linux_torch(profile, torch_dir, cache_dir, env)
    return profile


def _new_profile(info: TorchInfo) -> TargetProfile:
    profile = TargetProfile(torch=info, build="cuda" if info.cuda else ("rocm" if info.hip else "cpu"))
    if info.cuda:
        profile.cuda_version = info.cuda
        major = info.cuda.split(".", 1)[0]
        profile.cuda_major = int(major) if major.isdigit() else None
    return profile


def _has_dlls(torch_dir: Path) -> bool:
    lib = torch_dir / "lib"
    return lib.is_dir() and any(lib.glob("*.dll")) and not any(lib.glob("*.so*"))


def _windows_prefix(torch_dir: Path) -> Path | None:
    """``<prefix>`` of ``<prefix>/Lib/site-packages/torch``, if the layout is that."""
    sp = torch_dir.parent
    if sp.name.lower() == "site-packages" and sp.parent.name.lower() == "lib":
        return sp.parent.parent
    return None


# --------------------------------------------------------------------------- file reading (cached)


def read_elf_dynamic(path: Path | str) -> ElfInfo:
    """:func:`read_elf` without the symbol table (what the loader model needs)."""
    return read_elf(path, symbols=False)


read_elf_dynamic.cache_version = read_elf.cache_version  # type: ignore[attr-defined]


def read_pe_imports(path: Path | str) -> PeInfo:
    """:func:`read_pe` without the export table."""
    return read_pe(path, exports=False)


read_pe_imports.cache_version = read_pe.cache_version  # type: ignore[attr-defined]


@dataclass
class SymbolSummary(JsonMixin):
    """The part of an ELF symbol table inspection uses, small enough to cache and reload fast.

    ``imports_by_file``: versioned imports per DT_NEEDED file. ``c_imports`` / ``c_exports``:
    unversioned imports and all exports with C linkage (not ``_Z``-mangled): CUDA libraries
    export a C API, and dropping the tens of thousands of C++ symbols of libtorch keeps a
    warm inspection fast.
    """

    imports_by_file: dict[str, list[str]] = field(default_factory=dict)
    c_imports: list[str] = field(default_factory=list)
    c_exports: list[str] = field(default_factory=list)


def summarize_symbols(path: Path | str) -> SymbolSummary:
    info = read_elf(path, symbols=True)
    summary = SymbolSummary()
    for sym in info.imports:
        if sym.file is not None:
            summary.imports_by_file.setdefault(sym.file, []).append(sym.name)
        elif not sym.name.startswith("_Z"):
            summary.c_imports.append(sym.name)
    summary.c_exports = [e.name for e in info.exports if not e.name.startswith("_Z")]
    return summary


summarize_symbols.cache_version = (read_elf.cache_version, 1)  # type: ignore[attr-defined]


class _Readers:
    """ELF/PE readers going through the per-file cache when a cache folder is given."""

    def __init__(self, cache_dir: Path | None) -> None:
        self.cache_dir = CachePaths(cache_dir).inspect if cache_dir is not None else None
        self._memo: dict[tuple[str, str], Any] = {}

    def _read(self, path: Path | str, kind: str, reader: Callable[[Path], Any], cls: type) -> Any:
        key = (str(path), kind)
        if key in self._memo:
            return self._memo[key]
        if self.cache_dir is None:
            value = reader(Path(path))
        else:
            value = cached_read(Path(path), kind, reader, self.cache_dir, cls)
        self._memo[key] = value
        return value

    def elf(self, path: Path | str) -> ElfInfo:
        """Headers, dynamic section and versions, without the symbol table."""
        return self._read(path, "elf-dyn", read_elf_dynamic, ElfInfo)

    def symbols(self, path: Path | str) -> SymbolSummary:
        return self._read(path, "elf-symbols", summarize_symbols, SymbolSummary)

    def pe(self, path: Path | str) -> PeInfo:
        """Imports, delay imports and version resource, without the export table."""
        return self._read(path, "pe-imports", read_pe_imports, PeInfo)

    def pe_full(self, path: Path | str) -> PeInfo:
        return self._read(path, "pe", read_pe, PeInfo)


# --------------------------------------------------------------------------- collecting needs


_RULES = {
    "already-loaded": "already loaded",
    "preload": "LD_PRELOAD",
    "direct": "path given",
    "rpath": "DT_RPATH of {obj}",
    "ld_library_path": "LD_LIBRARY_PATH",
    "runpath": "DT_RUNPATH of {obj}",
    "ld.so.cache": "ld.so.cache",
    "default": "default dirs",
    "not-found": "NOT FOUND",
    "known-dll": "KnownDLLs",
    "api-set": "API set",
    "dll-load-dir": "folder of {obj}",
    "app-dir": "application folder",
    "user-dir": "add_dll_directory",
    "system32": "System32",
}


def rule_text(via: str, via_object: str | None) -> str:
    """Human wording of a resolution rule: ``DT_RPATH of libtorch_cuda.so``."""
    template = _RULES.get(via, via)
    return template.format(obj=Path(via_object).name if via_object else "?")


def _resolved(res: Resolution) -> Resolved:
    # glibc keeps the path as searched (torch/lib/../../nvidia/...); report it lexically normalised
    path = os.path.normpath(str(res.path)) if res.path is not None else None
    via_object = str(res.via_object) if res.via_object is not None else None
    return Resolved(path=path, via=res.via, via_object=via_object, rule=rule_text(res.via, via_object),
                    tried=[str(t) for t in (res.tried or [])])


def _reach(requester: str, res: Resolution) -> Reach:
    resolved = _resolved(res)
    return Reach(requester=requester, path=resolved.path, via=resolved.via, via_object=resolved.via_object,
                 rule=resolved.rule)


class _Collector:
    """Accumulates LibraryNeed / DlopenNeed entries across requesting objects."""

    def __init__(self, profile: TargetProfile) -> None:
        self.profile = profile
        self.needs: dict[str, LibraryNeed] = {}
        self.dlopens: dict[str, DlopenNeed] = {}

    def need(self, name: str, requester: str, *, versions: Sequence[str] = (),
             symbols: Sequence[str] = ()) -> LibraryNeed | None:
        parsed = parse_library_name(name)
        if parsed is None:
            return None
        entry = self.needs.get(name)
        if entry is None:
            entry = self.needs[name] = LibraryNeed(name=name, family=parsed.family, major=parsed.major)
        if requester not in entry.requested_by:
            entry.requested_by.append(requester)
        for v in versions:
            if v not in entry.versions_required:
                entry.versions_required.append(v)
        known = set(entry.symbols)
        for sym in symbols:
            if sym not in known:
                known.add(sym)
                entry.symbols.append(sym)
        return entry

    def dlopen(self, name: str, opener: str, reason: str) -> DlopenNeed | None:
        parsed = parse_library_name(name)
        if parsed is None:
            return None
        entry = self.dlopens.get(name)
        if entry is None:
            entry = DlopenNeed(name=name, family=parsed.family, opened_by=[], reason=reason)
            self.dlopens[name] = entry
        if opener not in entry.opened_by:
            entry.opened_by.append(opener)
        return entry

    def finish(self) -> None:
        order = {fam: i for i, fam in enumerate(_FAMILY_ORDER)}
        libs = sorted(self.needs.values(), key=lambda n: (order.get(n.family, len(order)), n.name))
        for lib in libs:
            lib.symbols.sort()
        self.profile.libraries = libs
        self.profile.dlopened = sorted(self.dlopens.values(), key=lambda d: d.name)
        if self.profile.cuda_major is None:
            majors = [n.major for n in libs if n.family == "cudart" and n.major is not None]
            if majors:
                self.profile.cuda_major = max(majors)
        for lib in libs:
            if lib.resolved is None or lib.resolved.via != "not-found":
                continue
            if lib.family in _DRIVER_FAMILIES:
                self.profile.warnings.append(
                    f"{lib.name} (needed by {', '.join(lib.requested_by)}) is not found: expected on a host "
                    "without an NVIDIA driver; ZLUDA provides it"
                )
            else:
                self.profile.warnings.append(
                    f"{lib.name} (needed by {', '.join(lib.requested_by)}) is not found by the loader"
                )


_DRIVER_FAMILIES = ("driver", "nvml")

_FAMILY_ORDER = ["driver", "nvml", "cudart", "cublas", "cublasLt", "cufft", "cufftw", "cusparse",
                 "cusparseLt", "curand", "cusolver", "cusolverMg", "nvrtc", "nvrtc-builtins", "nvjitlink",
                 "cudnn", "nccl", "cupti", "nvtx", "cufile", "nvshmem"]


# --------------------------------------------------------------------------- Windows


def _dlls_in(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix.lower() == ".dll" and p.is_file())
    except OSError:
        return []


def _fill_windows(profile: TargetProfile, torch_dir: Path, cache_dir: Path | None, *,
                  exec_prefix: Path | None) -> None:
    """torch/lib/*.dll and the CUDA DLLs they reach, resolved by the DLL search torch sets up."""
    profile.os = "windows"
    model = DllSearchModel.for_torch(torch_dir, exec_prefix=exec_prefix)
    roots = _dlls_in(torch_dir / "lib")
    profile.roots = [str(torch_dir / "lib")]
    _walk_pe(profile, roots, model, _Readers(cache_dir))


def _walk_pe(profile: TargetProfile, roots: list[Path], model: DllSearchModel, readers: _Readers) -> None:
    collector = _Collector(profile)
    queue = list(roots)
    seen: set[str] = set()
    while queue:
        path = queue.pop(0)
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        try:
            info = readers.pe(path)
        except BinaryFormatError as exc:
            profile.warnings.append(f"skipped {path}: {exc.message}")
            continue
        if info.machine != "AMD64":
            profile.warnings.append(f"skipped {path}: a {info.machine} DLL, not x86-64")
            continue
        name = Path(path).name
        profile.objects.append(ObjectInfo(path=str(path), format="pe", soname=info.dll_name,
                                          needed=info.needed))
        for dll, imported in [*info.imports.items(), *info.delay_imports.items()]:
            symbols = [i if isinstance(i, str) else f"#{i}" for i in imported]
            need = collector.need(dll, name, symbols=symbols)
            if need is None:
                continue
            res = model.resolve(dll, path)
            need.reach.append(_reach(name, res))
            if need.resolved is None:
                need.resolved = _resolved(res)
                if res.path and Path(res.path).is_file():
                    queue.append(Path(res.path))
        parsed = parse_library_name(name)
        for opened, reason in _DLOPENED_WINDOWS_BY_FAMILY.get(parsed.family if parsed else "", []):
            entry = collector.dlopen(opened, name, reason)
            if entry is not None and entry.resolved is None:
                entry.resolved = _resolved(model.resolve(opened, path))
    collector.finish()


# --------------------------------------------------------------------------- single binary


def _inspect_binary(path: Path, cache_dir: Path | None, env: Mapping[str, str] | None) -> TargetProfile:
    readers = _Readers(cache_dir)
    profile = TargetProfile()
    if is_pe(path):
        info = readers.pe(path)
        if info.machine != "AMD64":
            raise TargetError(
                f"{path} is a {info.machine} Windows binary, not x86-64",
                hint="ZLUDA runs x86-64 (AMD64) programs only; inspect the 64-bit build",
            )
        model = DllSearchModel(app_dir=path.parent)
        profile.roots = [str(path)]
        _walk_pe(profile, [path], model, readers)
        profile.os = "windows"
        return profile
    header = peek_elf_header(path)
    if header is None:
        raise TargetError(
            f"{path} is neither an ELF nor a PE file",
            hint="pass a shared library or executable (.so, .dll, .exe), a torch folder, or --python",
        )
    elf_class, machine = header
    if (elf_class, machine) != (64, "x86_64"):
        raise TargetError(
            f"{path} is a {elf_class}-bit {machine} ELF file, not x86-64",
            hint="ZLUDA runs 64-bit x86-64 programs only; inspect the x86-64 build",
        )
    try:
        readers.elf(path)
    except BinaryFormatError as exc:
        raise TargetError(exc.message, hint=exc.hint) from exc
    profile.roots = [str(path)]
    _walk_elf(profile, path, [], readers, env)
    return profile


# --------------------------------------------------------------------------- Linux


def _torch_roots(torch_dir: Path) -> tuple[Path | None, list[Path]]:
    """(the extension the interpreter dlopens, every other ELF object in torch/lib)."""
    ext = sorted(torch_dir.glob("_C.*.so")) or sorted(torch_dir.glob("_C*.so"))
    lib_dir = torch_dir / "lib"
    libs = sorted(p for p in lib_dir.glob("*.so*") if p.is_file() and peek_elf_header(p) is not None) \
        if lib_dir.is_dir() else []
    if ext:
        return ext[0], libs
    python_lib = lib_dir / "libtorch_python.so"
    if python_lib.is_file():
        return python_lib, libs
    return None, libs


def _fill_linux_torch(profile: TargetProfile, torch_dir: Path, cache_dir: Path | None,
                      env: Mapping[str, str] | None) -> None:
    readers = _Readers(cache_dir)
    root, libs = _torch_roots(torch_dir)
    if root is None:
        cuda_libs = [p for p in libs if _needs_cuda(readers, p)]
        if not cuda_libs:
            raise TargetError(
                f"{torch_dir} has no _C extension and no library that needs CUDA",
                hint="the torch install is incomplete; reinstall torch",
            )
        root, libs = cuda_libs[0], cuda_libs[1:]
        profile.warnings.append(f"no torch/_C extension found: simulated loading {root.name} instead")
    profile.os = "linux"
    _walk_elf(profile, root, libs, readers, env, scope=torch_dir.parent)


def _needs_cuda(readers: _Readers, path: Path) -> bool:
    try:
        info = readers.elf(path)
    except BinaryFormatError:
        return False
    return any(parse_library_name(n) is not None for n in info.needed)


def _chain(obj: LoadedObject, by_path: Mapping[str, LoadedObject]) -> list[ElfInfo]:
    """The objects that loaded ``obj``: its loader, that one's loader, ... (glibc's l_loader chain)."""
    chain: list[ElfInfo] = []
    seen = {obj.path}
    current = by_path.get(obj.loaded_by) if obj.loaded_by else None
    while current is not None and current.path not in seen:
        chain.append(current.info)
        seen.add(current.path)
        current = by_path.get(current.loaded_by) if current.loaded_by else None
    return chain


def _walk_elf(profile: TargetProfile, root: Path, extra: Sequence[Path], readers: _Readers,
              env: Mapping[str, str] | None, *, scope: Path | None = None) -> None:
    """Simulate ld.so loading ``root`` (as dlopen'd by the interpreter), then look at ``extra`` objects
    (loaded later by dlopen) against the same process; collect every CUDA-family need."""
    model = LoaderModel(LoaderEnv.from_host(env), reader=readers.elf)
    try:
        result = model.load(root, as_dlopen=root.suffix == ".so" or ".so." in root.name)
    except BinaryFormatError as exc:
        raise TargetError(exc.message, hint=exc.hint) from exc
    profile.roots = [str(root)]
    profile.warnings.extend(f"loader: {e}" for e in result.errors)
    profile.warnings.extend(f"loader: {w}" for w in result.warnings)
    collector = _Collector(profile)
    first: dict[tuple[str | None, str], Resolution] = {}
    for res in result.resolutions:
        first.setdefault((res.requester, res.name), res)
    by_path = {o.path: o for o in result.objects}
    loaded_reals = {os.path.realpath(o.path) for o in result.objects}
    objects: list[tuple[LoadedObject, list[ElfInfo]]] = [
        (o, _chain(o, by_path)) for o in result.objects if o.kind not in ("interpreter",)
    ]
    for path in extra:
        if os.path.realpath(path) in loaded_reals:
            continue
        try:
            info = readers.elf(path)
        except BinaryFormatError as exc:
            profile.warnings.append(f"skipped {path}: {exc.message}")
            continue
        objects.append((LoadedObject(path=str(path), load_name=str(path), soname=info.soname, info=info,
                                     kind="dlopen"), []))
    scope_real = os.path.realpath(scope) if scope is not None else None
    for obj, chain in objects:
        info = obj.info
        name = Path(obj.path).name
        cuda_needed = [n for n in info.needed if parse_library_name(n) is not None]
        own = parse_library_name(info.soname or name)
        in_scope = scope_real is not None and os.path.realpath(obj.path).startswith(scope_real + os.sep)
        if obj.path == str(root) or cuda_needed or own is not None or in_scope:
            profile.objects.append(ObjectInfo(path=obj.path, format="elf", soname=info.soname,
                                              needed=list(info.needed), rpath=list(info.rpath),
                                              runpath=list(info.runpath)))
        if cuda_needed:
            _collect_elf_needs(collector, model, readers, obj, chain, cuda_needed, first, result)
        _collect_elf_dlopens(collector, model, obj, chain, own.family if own else None, result)
    collector.finish()
    for check in result.version_problems:
        if parse_library_name(check.file) is not None:
            who = Path(check.requester).name
            profile.warnings.append(
                f"version {check.version} of {check.file} needed by {who}: {check.status}"
            )


def _collect_elf_needs(collector: _Collector, model: LoaderModel, readers: _Readers, obj: LoadedObject,
                       chain: list[ElfInfo], cuda_needed: list[str],
                       first: Mapping[tuple[str | None, str], Resolution], result: LoadResult) -> None:
    name = Path(obj.path).name
    try:
        summary = readers.symbols(obj.path)
    except BinaryFormatError:
        summary = SymbolSummary()
    by_file = summary.imports_by_file
    remaining = set(summary.c_imports)
    for needed in cuda_needed:
        in_load = first.get((obj.path, needed))
        res = in_load or model.resolve(needed, obj.info, chain, loaded=result.objects)
        symbols = list(by_file.get(needed, []))
        if remaining and res.found and res.path:
            try:
                exported = set(readers.symbols(res.path).c_exports)
            except BinaryFormatError:
                exported = set()
            hits = remaining & exported
            symbols.extend(sorted(hits))
            remaining -= hits
        entry = collector.need(needed, name, versions=obj.info.version_needs.get(needed, []), symbols=symbols)
        if entry is None:
            continue
        own_way = model.resolve(needed, obj.info, chain)
        entry.reach.append(_reach(name, own_way))
        if entry.resolved is None or (entry.resolved.via == "already-loaded" and res.via != "already-loaded"):
            entry.resolved = _resolved(res)


def _collect_elf_dlopens(collector: _Collector, model: LoaderModel, obj: LoadedObject, chain: list[ElfInfo],
                         family: str | None, result: LoadResult) -> None:
    name = Path(obj.path).name
    opened = list(_DLOPENED_BY_FAMILY.get(family or "", []))
    opened += _DLOPENED_BY_OBJECT.get(obj.info.soname or name, [])
    for lib, reason in opened:
        entry = collector.dlopen(lib, name, reason)
        if entry is not None and entry.resolved is None:
            entry.resolved = _resolved(model.resolve_dlopen(lib, obj.info, chain, loaded=result.objects))
