"""A model of glibc's ld.so: which file each DT_NEEDED / dlopen name binds to, and why.

It follows ``_dl_map_object`` (glibc elf/dl-load.c) step by step:

1. a name containing ``/`` is used as a path (DSTs expanded against the requester);
2. an object already loaded under that name, or whose DT_SONAME is that name,
   satisfies it (a preloaded file with a different SONAME does not);
3. if the requester has no DT_RUNPATH: the DT_RPATH of the requester, then of the
   object that loaded it, and on up; then the executable's DT_RPATH;
4. LD_LIBRARY_PATH;
5. the requester's own DT_RUNPATH (not inherited);
6. /etc/ld.so.cache (entries in system dirs skipped for a DF_1_NODEFLIB requester);
7. the default dirs (skipped for a DF_1_NODEFLIB requester).

Every search dir is tried with its glibc-hwcaps (and, before glibc 2.37, legacy
hwcap) subdirectories first. A file of another ELF class/machine is skipped; a
file that is not ELF at all is a fatal error, as in glibc. Objects load
breadth-first from the executable and its preloads, and each object's version
needs are checked against the object that satisfied them.

``zluda_runner.loader.ldlog`` reads the real loader's ``LD_DEBUG=libs`` output, the
ground truth the model is tested against.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.binfmt.elf import ELF_PEEK_BYTES, ElfInfo, elf_header, expand_dst, read_elf
from zluda_runner.core.errors import BinaryFormatError
from zluda_runner.core.serial import JsonMixin
from zluda_runner.loader.files import LoaderFiles, OsFiles
from zluda_runner.loader.hostinfo import interpreter_search_info, read_ld_so_cache

DEFAULT_INTERPRETER = "/lib64/ld-linux-x86-64.so.2"
DEBIAN_DEFAULT_DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"]
FEDORA_DEFAULT_DIRS = ["/lib64", "/usr/lib64"]
LD_SO_PRELOAD = "/etc/ld.so.preload"

VIA_VALUES = (
    "already-loaded", "preload", "direct", "rpath", "ld_library_path", "runpath", "ld.so.cache", "default",
    "audit", "not-found", "invalid-elf",
)

#: How a redirecting LD_AUDIT library's ``la_objsearch`` answers a mapped name (glibc 2.36, measured):
#: ``path``: every request (bare or path) with the mapped path: upstream ZLUDA's ``zluda_ld``;
#: ``bare``: a bare name with the mapped path, a path with the bare name, other candidates refused:
#: ours (shims/redirect/redirect.c). The object is registered under the names ld.so opened it by.
AUDIT_PATH, AUDIT_BARE = "path", "bare"
AUDIT_MODES = (AUDIT_PATH, AUDIT_BARE)
ABORT_NEEDED = ("Inconsistency detected by ld.so: dl-version.c: 204: _dl_check_map_versions: "
                "Assertion `needed != NULL' failed!")


@dataclass
class LoaderEnv(JsonMixin):
    """Everything outside the binaries that steers ld.so."""

    ld_library_path: list[str] = field(default_factory=list)
    #: LD_PRELOAD entries, then /etc/ld.so.preload entries (glibc's order)
    preload: list[str] = field(default_factory=list)
    #: LD_AUDIT libraries; recorded only: their la_objsearch can redirect any lookup
    audit: list[str] = field(default_factory=list)
    #: a redirecting audit library's map (file name -> path) and how it answers (see AUDIT_MODES)
    redirect: dict[str, str] = field(default_factory=dict)
    redirect_mode: str | None = None
    #: ld.so.cache entries for this machine's x86-64 libraries: name -> path
    ldcache: dict[str, str] = field(default_factory=dict)
    default_dirs: list[str] = field(default_factory=lambda: list(FEDORA_DEFAULT_DIRS))
    #: subdirectories tried, in order, under every search dir before the dir itself
    hwcap_subdirs: list[str] = field(default_factory=list)
    #: what ``$LIB`` expands to (Debian: lib/x86_64-linux-gnu, Fedora: lib64)
    dst_lib: str = "lib64"
    #: what ``$PLATFORM`` expands to
    platform: str = "x86_64"
    #: the program interpreter assumed when the root object names none
    interpreter: str = DEFAULT_INTERPRETER

    @classmethod
    def from_host(cls, env: Mapping[str, str] | None = None, *, interpreter: str | None = None) -> LoaderEnv:
        """This machine's loader setup: environment variables, ld.so.cache, the interpreter's search path."""
        environ = os.environ if env is None else env
        interp = interpreter or DEFAULT_INTERPRETER
        default_dirs, hwcaps = interpreter_search_info(interp)
        if not default_dirs:
            debian = os.path.isdir(DEBIAN_DEFAULT_DIRS[0])
            default_dirs = list(DEBIAN_DEFAULT_DIRS if debian else FEDORA_DEFAULT_DIRS)
        multiarch = next((d for d in default_dirs if d.startswith("/lib/") and "-linux-" in d), None)
        preload = split_preload(environ.get("LD_PRELOAD", ""))
        with contextlib.suppress(OSError):
            preload += split_preload(Path(LD_SO_PRELOAD).read_text(errors="replace"))
        return cls(
            ld_library_path=split_search_path(environ.get("LD_LIBRARY_PATH", "")),
            preload=preload,
            audit=[a for a in re.split(r"[:\s]+", environ.get("LD_AUDIT", "")) if a],
            ldcache=read_ld_so_cache(),
            default_dirs=default_dirs,
            hwcap_subdirs=hwcaps,
            dst_lib=multiarch[1:] if multiarch else "lib64",
            interpreter=interp,
        )


def split_search_path(value: str) -> list[str]:
    """LD_LIBRARY_PATH / RPATH entries: split on ':' and ';'; an empty entry means the cwd."""
    if not value:
        return []
    return [entry or "." for entry in re.split(r"[:;]", value)]


def split_preload(value: str) -> list[str]:
    """LD_PRELOAD and /etc/ld.so.preload are split on whitespace and ':'."""
    return [p for p in re.split(r"[:\s]+", value) if p]


# --------------------------------------------------------------------------- results


@dataclass
class Resolution(JsonMixin):
    """How one name was bound: the file (or None), the rule, and the object whose path list matched."""

    name: str
    path: str | None
    via: str
    via_object: str | None = None
    tried: list[str] = field(default_factory=list)
    #: the object that asked (None for LD_PRELOAD entries)
    requester: str | None = None

    @property
    def found(self) -> bool:
        return self.path is not None and self.via not in ("not-found", "invalid-elf")


@dataclass
class LoadedObject(JsonMixin):
    path: str
    load_name: str
    soname: str | None
    info: ElfInfo
    #: executable | interpreter | preload | needed | root
    kind: str = "needed"
    #: the object whose DT_NEEDED first loaded this one (glibc's l_loader)
    loaded_by: str | None = None
    #: every name this object answers to (load names and, once matched, its SONAME)
    names: list[str] = field(default_factory=list)


@dataclass
class VersionCheck(JsonMixin):
    """One needed version: ok | versym-only (no DT_VERDEF, a DT_VERSYM: accepted, the Rust cdylib
    shape) | missing (fatal) | weak-missing (warning) | unversioned-provider (no DT_VERSYM: passes at
    load, the first versioned binding asserts in check_match) | provider-missing (no object registered
    under the needed file name: ld.so aborts, dl-version.c ``needed != NULL``)."""

    requester: str
    file: str
    version: str
    provider: str | None
    status: str


@dataclass
class LoadResult(JsonMixin):
    root: str
    objects: list[LoadedObject] = field(default_factory=list)
    resolutions: list[Resolution] = field(default_factory=list)
    version_checks: list[VersionCheck] = field(default_factory=list)
    #: fatal loader errors, worded like ld.so's
    errors: list[str] = field(default_factory=list)
    #: non-fatal messages (an LD_PRELOAD entry that cannot be found, a weak version miss, LD_AUDIT present)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def binding(self, name: str) -> str | None:
        """Path that ``name`` bound to first (any requester), or None."""
        for res in self.resolutions:
            if res.name == name and res.found:
                return res.path
        return None

    @property
    def version_problems(self) -> list[VersionCheck]:
        return [c for c in self.version_checks if c.status not in ("ok", "versym-only")]


# --------------------------------------------------------------------------- the model


class _Map:
    """A loaded object during simulation (glibc's link_map)."""

    def __init__(self, path: str, info: ElfInfo, kind: str, loader: _Map | None, origin: str,
                 names: list[str]) -> None:
        self.path = path
        self.info = info
        self.kind = kind
        self.loader = loader
        self.origin = origin
        self.names = names

    @functools.cached_property
    def file_id(self) -> tuple[int, int] | None:
        """(device, inode): asked only when a new object is mapped, never by a lone lookup."""
        return _file_id(self.path)


def _file_id(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _lib_origin(path: str) -> str:
    """$ORIGIN of a library: the dir of the path it was found at (glibc does not resolve symlinks)."""
    return os.path.dirname(os.path.abspath(path)) or "/"


def _exe_origin(path: str) -> str:
    """$ORIGIN of the executable: from /proc/self/exe, i.e. with symlinks resolved."""
    return os.path.dirname(os.path.realpath(path)) or "/"


class LoaderModel:
    """Simulate ld.so for one environment. ``reader`` reads ElfInfo (pass a cached reader for speed);
    ``files``: where folders are listed and files looked at (default: :class:`OsFiles`)."""

    def __init__(self, env: LoaderEnv, *, reader: Callable[[Path], ElfInfo] = read_elf,
                 files: LoaderFiles | None = None) -> None:
        self.env = env
        self.reader = reader
        self.files = files or OsFiles()
        self._infos: dict[str, ElfInfo] = {}
        self._listings: dict[str, frozenset[str] | None] = {}
        self._subfolders: dict[str, list[tuple[str, str]]] = {}

    # ------------------------------------------------------------------ public API

    def load(self, root: Path | str, *, as_dlopen: bool | None = None) -> LoadResult:
        """Load ``root`` like ld.so: the executable (or, for a library, a dlopen of it from a
        program with no RPATH/RUNPATH), then preloads, then DT_NEEDED breadth-first."""
        root_path = os.path.abspath(str(root))
        info = self._read(root_path, foreign_ok=False)
        if info is None:
            raise BinaryFormatError(f"{root} cannot be read", hint="check the path")
        is_exe = info.interpreter is not None and not (info.soname and info.elf_type == "DYN")
        if as_dlopen is not None:
            is_exe = not as_dlopen
        result = LoadResult(root=root_path)
        maps: list[_Map] = []
        main: _Map | None = None
        if is_exe:
            main = _Map(root_path, info, "executable", None, _exe_origin(root_path), [])
            maps.append(main)
        interp = (info.interpreter if is_exe else None) or self.env.interpreter
        interp_info = self._read(interp, foreign_ok=True)
        if interp_info is not None:
            names = [interp] + ([interp_info.soname] if interp_info.soname else [])
            maps.append(_Map(interp, interp_info, "interpreter", None, _lib_origin(interp), names))
        if self.env.audit:
            result.warnings.append(
                "LD_AUDIT is set (" + ":".join(self.env.audit) + "): its la_objsearch may redirect any lookup"
            )
        queue: list[_Map] = [main] if main is not None else []
        for entry in self.env.preload:
            res, new = self._map_object(entry, main, maps, main, kind="preload")
            res.requester = None
            result.resolutions.append(res)
            if not res.found:
                result.warnings.append(
                    f"ERROR: ld.so: object '{entry}' from LD_PRELOAD cannot be preloaded: ignored."
                )
            elif new is not None:
                queue.append(new)
        if main is None:
            # a dlopen of the library root by a program with no RPATH/RUNPATH of its own
            res, new = self._map_object(root_path, None, maps, None, kind="root")
            result.resolutions.append(res)
            if new is not None:
                queue.append(new)
        self._load_deps(queue, maps, main, result)
        self._check_versions(maps, result)
        result.objects = [
            LoadedObject(
                path=m.path, load_name=(m.names[0] if m.names else m.path), soname=m.info.soname, info=m.info,
                kind=m.kind, loaded_by=m.loader.path if m.loader else None, names=list(m.names),
            )
            for m in maps
        ]
        return result

    def resolve(self, name: str, requester: ElfInfo, loader_chain: Sequence[ElfInfo] = (), *,
                loaded: Sequence[LoadedObject] = (), main: ElfInfo | None = None) -> Resolution:
        """One lookup in glibc's order. ``loader_chain``: the object that loaded ``requester``, its loader,
        ... up to the executable. ``loaded``: objects already in the process (default: none).
        ``main``: the executable (default: the last of the chain if it has a program interpreter)."""
        maps = [_Map(o.path, o.info, o.kind, None, _lib_origin(o.path), list(o.names) or [o.load_name])
                for o in loaded]
        if main is None and loader_chain and loader_chain[-1].interpreter is not None:
            main = loader_chain[-1]
        chain_infos = [requester, *loader_chain]
        chain_maps: list[_Map] = []
        for pos, inf in enumerate(chain_infos):
            is_main = main is not None and inf is main
            origin = _exe_origin(inf.path) if is_main else _lib_origin(inf.path)
            chain_maps.append(_Map(inf.path, inf, "executable" if is_main else "needed", None, origin,
                                   [inf.path]))
            if pos:
                chain_maps[pos - 1].loader = chain_maps[pos]
        main_map = next((m for m in chain_maps if main is not None and m.info is main), None)
        if main_map is None and main is not None:
            main_map = _Map(main.path, main, "executable", None, _exe_origin(main.path), [main.path])
        res, _new = self._map_object(name, chain_maps[0], maps, main_map, kind="needed", register=False)
        res.requester = requester.path
        return res

    def resolve_dlopen(self, name: str, caller: ElfInfo, loader_chain: Sequence[ElfInfo] = (), *,
                       loaded: Sequence[LoadedObject] = (), main: ElfInfo | None = None) -> Resolution:
        """``dlopen(name)`` called from code in ``caller`` (e.g. libcudart dlopen("libcuda.so.1")):
        glibc searches with the caller as the requester, so the caller's RUNPATH, or the RPATHs of the
        caller and its loaders, apply."""
        return self.resolve(name, caller, loader_chain, loaded=loaded, main=main)

    # ------------------------------------------------------------------ internals

    def _read(self, path: str, *, foreign_ok: bool) -> ElfInfo | None:
        cached = self._infos.get(path)
        if cached is not None:
            return cached
        if not self.files.is_file_real(path):
            return None
        if foreign_ok:
            peek = self._peek(path)
            if peek is None or peek != (64, "x86_64"):
                return None
        info = self.reader(Path(path))
        self._infos[path] = info
        return info

    def _load_deps(self, queue: list[_Map], maps: list[_Map], main: _Map | None, result: LoadResult) -> None:
        i = 0
        while i < len(queue):
            obj = queue[i]
            i += 1
            for needed in obj.info.needed:
                res, new = self._map_object(needed, obj, maps, main, kind="needed")
                res.requester = obj.path
                result.resolutions.append(res)
                if res.via == "not-found":
                    result.errors.append(
                        f"{needed}: cannot open shared object file: No such file or directory"
                        f" (needed by {obj.path})"
                    )
                elif res.via == "invalid-elf":
                    result.errors.append(f"{res.path}: invalid ELF header (needed by {obj.path})")
                if new is not None:
                    queue.append(new)

    def _match_loaded(self, name: str, maps: list[_Map]) -> _Map | None:
        for m in maps:
            if name in m.names or name == m.path:
                return m
        for m in maps:
            if m.info.soname == name:
                m.names.append(name)
                return m
        return None

    def _map_object(self, name: str, loader: _Map | None, maps: list[_Map], main: _Map | None, *,
                    kind: str, register: bool = True) -> tuple[Resolution, _Map | None]:
        """glibc's _dl_map_object: the Resolution, and the new _Map when a new object got loaded."""
        if "$" in name and loader is not None:
            name = self._expand(name, loader)
        hit = self._match_loaded(name, maps)
        if hit is not None:
            return Resolution(name, hit.path, "already-loaded", hit.path), None
        requested = name
        answered, origname = self._audit(name, loader)
        if answered is None:
            return Resolution(requested, None, "not-found", None, []), None
        name = answered
        if "/" in name:
            res = self._try_direct(name, loader)
        elif origname is not None and self.env.redirect_mode == AUDIT_BARE:
            res = self._search_bare_redirect(name)
        else:
            res = self._search(name, loader, main)
        res.name = requested
        if origname is not None and res.found:
            res.via = "audit"
        if not res.found or not register:
            return res, None
        assert res.path is not None
        if kind == "preload":
            res.via = "preload"
        file_id = _file_id(res.path)
        same = next((m for m in maps if file_id is not None and m.file_id == file_id), None)
        if same is not None:  # the same file reached again: glibc adds the name it opened it by, only
            if name not in same.names:
                same.names.append(name)
            res.path = same.path
            return res, None
        names = [name] + ([origname] if origname is not None and origname != name else [])
        new = _Map(res.path, self._infos[res.path], kind, loader, _lib_origin(res.path), names)
        maps.append(new)
        return res, new

    def _audit(self, name: str, loader: _Map | None) -> tuple[str | None, str | None]:
        """``la_objsearch(name, LA_SER_ORIG)`` of the modelled redirector: (new name, original name when
        changed). Asked only after no loaded object matched ``name``."""
        mode, table = self.env.redirect_mode, self.env.redirect
        base = os.path.basename(name)
        if mode not in AUDIT_MODES or base not in table or table[base] == name:
            return name, None
        if "/" in name and mode == AUDIT_BARE:
            if loader is not None and loader.path in table.values():
                return name, None  # a replacement forwarding to the original by path
            return base, name
        return table[base], name

    def _search_bare_redirect(self, name: str) -> Resolution:
        """Our redirector refuses every search candidate but the mapped path (a link-folder entry that
        must be on LD_LIBRARY_PATH)."""
        want = self.env.redirect[name]
        on_path = os.path.dirname(want) in [d.rstrip("/") for d in self.env.ld_library_path]
        if on_path and self._verify(want) == "ok":
            return Resolution(name, want, "audit", None, [want])
        return Resolution(name, None, "not-found", None, [want])

    def _peek(self, path: str) -> tuple[int, str] | None:
        return elf_header(self.files.head_real(path, ELF_PEEK_BYTES))

    def _expand(self, entry: str, obj: _Map) -> str:
        return expand_dst(entry, obj.origin, lib=self.env.dst_lib, platform=self.env.platform)

    def _verify(self, path: str) -> str:
        """'ok', 'absent', 'other-class' (skipped by glibc) or 'invalid' (fatal in glibc)."""
        if not self.files.is_file_real(path):
            return "absent"
        peek = self._peek(path)
        if peek is None:
            return "invalid"
        if peek != (64, "x86_64"):
            return "other-class"
        try:
            self._read(path, foreign_ok=False)
        except BinaryFormatError:
            return "invalid"
        return "ok"

    def _try_direct(self, name: str, loader: _Map | None) -> Resolution:
        path = os.path.abspath(name)
        status = self._verify(path)
        if status == "ok":
            return Resolution(name, path, "direct", loader.path if loader else None, [path])
        if status == "invalid":
            return Resolution(name, path, "invalid-elf", None, [path])
        return Resolution(name, None, "not-found", None, [path])

    def _search_dirs(self, name: str, dirs: Sequence[str], tried: list[str]) -> tuple[str | None, str]:
        """Try each dir (hwcap subdirs first). Returns (path, status) of the first usable or fatal file."""
        for d in dirs:
            for folder, prefix in self._folders_of(d):
                cand = prefix + name  # os.path.join(folder, name) for a bare name
                tried.append(cand)
                if not self._listed(folder, name):
                    continue
                status = self._verify(cand)
                if status in ("ok", "invalid"):
                    return cand, status
        return None, "absent"

    def _folders_of(self, d: str) -> list[tuple[str, str]]:
        """The folders a search of ``d`` tries, each with the prefix of a name in it: its hwcap
        subfolders, then ``d``."""
        folders = self._subfolders.get(d)
        if folders is None:
            base = d.rstrip("/") or "/"
            names = [*(os.path.join(base, s) for s in self.env.hwcap_subdirs if s), base]
            folders = self._subfolders[d] = [(f, os.path.join(f, "")) for f in names]
        return folders

    def _listed(self, folder: str, name: str) -> bool:
        """Whether ``folder`` may hold ``name``: each folder is listed once per model, as a search tries
        the same folders (and their hwcap subfolders) for every name and most candidates are absent."""
        if folder not in self._listings:
            listed = self.files.list_real(folder or ".")  # None: not listable, ask each time
            self._listings[folder] = None if listed is None else frozenset(listed)
        names = self._listings[folder]
        return names is None or name in names

    def _rpath_dirs(self, obj: _Map, which: str) -> list[str]:
        entries = obj.info.runpath if which == "runpath" else obj.info.rpath
        if which == "rpath" and obj.info.runpath:
            return []  # glibc ignores DT_RPATH when DT_RUNPATH is present
        return [self._expand(e, obj) if e else "." for e in entries]

    def _search(self, name: str, loader: _Map | None, main: _Map | None) -> Resolution:
        tried: list[str] = []

        def found(path: str, status: str, via: str, via_object: str | None) -> Resolution:
            if status == "invalid":
                return Resolution(name, path, "invalid-elf", via_object, tried)
            return Resolution(name, path, via, via_object, tried)

        if loader is None or not loader.info.runpath:
            did_main = False
            obj = loader
            while obj is not None:
                dirs = self._rpath_dirs(obj, "rpath")
                if dirs:
                    path, status = self._search_dirs(name, dirs, tried)
                    if path:
                        return found(path, status, "rpath", obj.path)
                    did_main |= obj is main
                obj = obj.loader
            if not did_main and main is not None:
                dirs = self._rpath_dirs(main, "rpath")
                if dirs:
                    path, status = self._search_dirs(name, dirs, tried)
                    if path:
                        return found(path, status, "rpath", main.path)
        if self.env.ld_library_path:
            lib_dirs = [self._expand(e, main) if main is not None and "$" in e else e
                        for e in self.env.ld_library_path]
            path, status = self._search_dirs(name, lib_dirs, tried)
            if path:
                return found(path, status, "ld_library_path", None)
        if loader is not None and loader.info.runpath:
            path, status = self._search_dirs(name, self._rpath_dirs(loader, "runpath"), tried)
            if path:
                return found(path, status, "runpath", loader.path)
        flags_obj = loader if loader is not None else main
        nodeflib = flags_obj is not None and flags_obj.info.nodeflib
        cached = self.env.ldcache.get(name)
        if cached is not None and not (nodeflib and os.path.dirname(cached) in self.env.default_dirs):
            tried.append(cached)
            status = self._verify(cached)
            if status in ("ok", "invalid"):
                return found(cached, status, "ld.so.cache", None)
        if not nodeflib:
            path, status = self._search_dirs(name, self.env.default_dirs, tried)
            if path:
                return found(path, status, "default", None)
        return Resolution(name, None, "not-found", None, tried)

    def _check_versions(self, maps: list[_Map], result: LoadResult) -> None:
        """glibc's _dl_check_map_versions: each version need is looked up by its *file name* among the
        names loaded objects are registered under (find_needed). None: ld.so aborts. A provider with
        no DT_VERDEF passes; one with no DT_VERSYM either aborts at its first versioned binding."""
        load_failed = bool(result.errors)  # a missing DT_NEEDED stops ld.so before any version check
        for m in maps:
            for file_name, versions in m.info.version_needs.items():
                provider = next((p for p in maps if file_name in p.names or file_name == p.path), None)
                weak = set(m.info.version_needs_weak.get(file_name, ()))
                defined = set(provider.info.version_defs) if provider else set()
                if provider is not None and provider.info.version_base:
                    defined.add(provider.info.version_base)
                for version in versions:
                    status = self._version_status(provider, defined, version, weak)
                    provider_at = provider.path if provider else None
                    check = VersionCheck(m.path, file_name, version, provider_at, status)
                    result.version_checks.append(check)
                    if status == "missing":
                        result.errors.append(
                            f"{provider_at}: version `{version}' not found (required by {m.path})"
                        )
                    elif status == "weak-missing":
                        result.warnings.append(
                            f"weak version `{version}' not found in {file_name} (required by {m.path})"
                        )
                if provider is None and versions and not load_failed:
                    result.errors.append(
                        f"{ABORT_NEEDED} ({m.path} has a version need on {file_name}, and no loaded object "
                        "is registered under that name)"
                    )

    @staticmethod
    def _version_status(provider: _Map | None, defined: set[str], version: str, weak: set[str]) -> str:
        if provider is None:
            return "provider-missing"
        if not defined:
            return "versym-only" if provider.info.has_versym else "unversioned-provider"
        if version in defined:
            return "ok"
        return "weak-missing" if version in weak else "missing"
