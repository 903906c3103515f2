"""Collecting the CUDA libraries a build needs, and the rule that finds each."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.families import parse_library_name
from zluda_runner.inspection.profile import DlopenNeed, LibraryNeed, ObjectInfo, Reach, Resolved
from zluda_runner.loader.glibc import Resolution

# Libraries opened at run time with dlopen/LoadLibrary by name, so no import table shows them.
# (family of the opener, name opened, why). cudart 12/13 dlopens the driver by its bare name
# (see shared/DESIGN.md); torch's c10/cuda/driver_api.cpp dlopens libcuda.so.1 and
# libnvidia-ml.so.1 itself.
DLOPENED_BY_FAMILY: dict[str, list[tuple[str, str]]] = {
    "cudart": [("libcuda.so.1", "cudart loads the driver lazily by its bare name")],
}
DLOPENED_BY_OBJECT: dict[str, list[tuple[str, str]]] = {
    "libc10_cuda.so": [
        ("libcuda.so.1", "torch's c10 driver API table"),
        ("libnvidia-ml.so.1", "torch's c10 caching allocator asks NVML for memory"),
    ],
}
DLOPENED_WINDOWS_BY_FAMILY: dict[str, list[tuple[str, str]]] = {
    "cudart": [("nvcuda.dll", "cudart loads the driver lazily by its bare name")],
}

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


def resolved_of(res: Resolution) -> Resolved:
    # glibc keeps the path as searched (torch/lib/../../nvidia/...); report it lexically normalised
    path = os.path.normpath(str(res.path)) if res.path is not None else None
    via_object = str(res.via_object) if res.via_object is not None else None
    return Resolved(path=path, via=res.via, via_object=via_object, rule=rule_text(res.via, via_object),
                    tried=tuple(str(t) for t in (res.tried or [])))


def reach_of(requester: str, res: Resolution) -> Reach:
    resolved = resolved_of(res)
    return Reach(requester=requester, path=resolved.path, via=resolved.via, via_object=resolved.via_object,
                 rule=resolved.rule)


@dataclass
class NeedEntry:
    """A :class:`LibraryNeed` while the walk still adds requesters, symbols and reaches to it."""

    name: str
    family: str
    major: int | None
    requested_by: list[str] = field(default_factory=list)
    versions_required: list[str] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    resolved: Resolved | None = None
    reach: list[Reach] = field(default_factory=list)

    def freeze(self) -> LibraryNeed:
        return LibraryNeed(
            name=self.name, family=self.family, major=self.major, requested_by=tuple(self.requested_by),
            versions_required=tuple(self.versions_required), symbols=tuple(sorted(self.symbols)),
            resolved=self.resolved, reach=tuple(self.reach),
        )


@dataclass
class DlopenEntry:
    """A :class:`DlopenNeed` while the walk still adds openers to it."""

    name: str
    family: str
    reason: str
    opened_by: list[str] = field(default_factory=list)
    resolved: Resolved | None = None

    def freeze(self) -> DlopenNeed:
        return DlopenNeed(name=self.name, family=self.family, opened_by=tuple(self.opened_by),
                          reason=self.reason, resolved=self.resolved)


@dataclass(frozen=True)
class Walked:
    """What a walk of the target's binaries found: the part of a TargetProfile the loader model gives."""

    os: str
    roots: tuple[str, ...]
    objects: tuple[ObjectInfo, ...] = ()
    libraries: tuple[LibraryNeed, ...] = ()
    dlopened: tuple[DlopenNeed, ...] = ()
    warnings: tuple[str, ...] = ()
    cudart_major: int | None = None  # the newest cudart a binary links (the CUDA major, without torch)


@dataclass(frozen=True)
class Collected:
    """The needs collected over every requesting object, in report order, with their warnings."""

    libraries: tuple[LibraryNeed, ...]
    dlopened: tuple[DlopenNeed, ...]
    cudart_major: int | None
    warnings: tuple[str, ...]


class Collector:
    """Accumulates library and dlopen needs across requesting objects; :meth:`finish` freezes them."""

    def __init__(self) -> None:
        self.needs: dict[str, NeedEntry] = {}
        self.dlopens: dict[str, DlopenEntry] = {}

    def need(self, name: str, requester: str, *, versions: Sequence[str] = (),
             symbols: Sequence[str] = ()) -> NeedEntry | None:
        parsed = parse_library_name(name)
        if parsed is None:
            return None
        entry = self.needs.get(name)
        if entry is None:
            entry = self.needs[name] = NeedEntry(name=name, family=parsed.family, major=parsed.major)
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

    def dlopen(self, name: str, opener: str, reason: str) -> DlopenEntry | None:
        parsed = parse_library_name(name)
        if parsed is None:
            return None
        entry = self.dlopens.get(name)
        if entry is None:
            entry = DlopenEntry(name=name, family=parsed.family, reason=reason)
            self.dlopens[name] = entry
        if opener not in entry.opened_by:
            entry.opened_by.append(opener)
        return entry

    def finish(self) -> Collected:
        order = {fam: i for i, fam in enumerate(FAMILY_ORDER)}
        libs = [n.freeze() for n in sorted(self.needs.values(),
                                           key=lambda n: (order.get(n.family, len(order)), n.name))]
        majors = [n.major for n in libs if n.family == "cudart" and n.major is not None]
        warnings: list[str] = []
        for lib in libs:
            if lib.resolved is None or lib.resolved.via != "not-found":
                continue
            if lib.family in DRIVER_FAMILIES:
                warnings.append(
                    f"{lib.name} (needed by {', '.join(lib.requested_by)}) is not found: expected on a host "
                    "without an NVIDIA driver; ZLUDA provides it"
                )
            else:
                warnings.append(
                    f"{lib.name} (needed by {', '.join(lib.requested_by)}) is not found by the loader")
        return Collected(
            libraries=tuple(libs),
            dlopened=tuple(d.freeze() for d in sorted(self.dlopens.values(), key=lambda d: d.name)),
            cudart_major=max(majors) if majors else None,
            warnings=tuple(warnings),
        )


DRIVER_FAMILIES = ("driver", "nvml")

FAMILY_ORDER = ["driver", "nvml", "cudart", "cublas", "cublasLt", "cufft", "cufftw", "cusparse",
                 "cusparseLt", "curand", "cusolver", "cusolverMg", "nvrtc", "nvrtc-builtins", "nvjitlink",
                 "cudnn", "nccl", "cupti", "nvtx", "cufile", "nvshmem"]


