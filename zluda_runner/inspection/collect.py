"""Collecting the CUDA libraries a build needs, and the rule that finds each."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from zluda_runner.core.families import parse_library_name
from zluda_runner.inspection.profile import DlopenNeed, LibraryNeed, Reach, Resolved, TargetProfile
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
                    tried=[str(t) for t in (res.tried or [])])


def reach_of(requester: str, res: Resolution) -> Reach:
    resolved = resolved_of(res)
    return Reach(requester=requester, path=resolved.path, via=resolved.via, via_object=resolved.via_object,
                 rule=resolved.rule)


class Collector:
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
        order = {fam: i for i, fam in enumerate(FAMILY_ORDER)}
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
            if lib.family in DRIVER_FAMILIES:
                self.profile.warnings.append(
                    f"{lib.name} (needed by {', '.join(lib.requested_by)}) is not found: expected on a host "
                    "without an NVIDIA driver; ZLUDA provides it"
                )
            else:
                self.profile.warnings.append(
                    f"{lib.name} (needed by {', '.join(lib.requested_by)}) is not found by the loader"
                )


DRIVER_FAMILIES = ("driver", "nvml")

FAMILY_ORDER = ["driver", "nvml", "cudart", "cublas", "cublasLt", "cufft", "cufftw", "cusparse",
                 "cusparseLt", "curand", "cusolver", "cusolverMg", "nvrtc", "nvrtc-builtins", "nvjitlink",
                 "cudnn", "nccl", "cupti", "nvtx", "cufile", "nvshmem"]


