"""A stand-in whose own host library is missing (ZLUDA's cuDNN without MIOpen, cuSPARSE without
rocSPARSE, cuBLASLt without hipBLASLt ...), on Linux (:mod:`zluda_runner.plan.shimdeps`) and Windows
(:mod:`zluda_runner.plan.windows_deps`) alike: fatal only for the driver and cuBLAS
(:func:`~zluda_runner.plan.model.is_optional`); any other is not bound. NVIDIA's own library then loads
in its place and is called only when used, the matching default is applied where one exists
(``cudnn-off``, ``DISABLE_ADDMM_CUDA_LT=1``: :mod:`zluda_runner.plan.defaults`), and the binding says
what will not work and the fix (its dependency problems, which name the package to install).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import PureWindowsPath

from zluda_runner.plan.model import (
    FATAL,
    MECH_NONE,
    OPTIONAL_LOSSES,
    UNBOUND,
    WARN,
    Binding,
    is_optional,
)

# "<shim> needs <library>, which ..." / "<need> needs <dll> (imported by ...), which ...": the library
_NEEDS = re.compile(r" needs (\S+?)(?:,| \(| which|$)")


def missing_libraries(problems: Sequence[str]) -> list[str]:
    """The host libraries named missing in a binding's dependency ``problems``, each once."""
    return list(dict.fromkeys(m.group(1) for p in problems for m in [_NEEDS.search(p)] if m))


def with_missing_dependencies(binding: Binding, problems: Sequence[str]) -> Binding:
    """``binding`` once its shim's own dependency ``problems`` (libraries found nowhere the loader looks)
    are known: fatal for the driver and cuBLAS; any other stand-in is not bound (:func:`unbind`)."""
    if not problems:
        return binding
    if _unbinds(binding):
        return unbind(binding, problems, problems)
    return replace(binding, verdict=FATAL, reasons=(*binding.reasons, *problems),
                   problems=(*binding.problems, *problems))


def with_walked_dependencies(binding: Binding, walked: Binding) -> Binding:
    """Windows: ``walked``, the binding once the walk of its DLL's imports has judged it, not bound where
    the walk made it fatal (an import in none of the folders searched) and it is not the driver or cuBLAS."""
    if walked.verdict != FATAL or not _unbinds(binding):
        return walked
    return unbind(binding, walked.problems[len(binding.problems):], walked.reasons[len(binding.reasons):])


def _unbinds(binding: Binding) -> bool:
    """Is a missing dependency of ``binding`` (as it was before) a reason to leave it unbound?"""
    return binding.verdict != FATAL and is_optional(binding.family)


def unbind(binding: Binding, problems: Sequence[str], reasons: Sequence[str]) -> Binding:
    """``binding`` (as it was before its dependencies were looked at) not bound, for the dependency
    ``problems`` (the walk's ``reasons``, problems included): NVIDIA's own library loads in its place. What
    it would have been bound by no longer applies; the last problem says what will not work and the fix."""
    name, lost = OPTIONAL_LOSSES.get(binding.family, (binding.family, f"calls into {binding.family} fail"))
    shim = PureWindowsPath(binding.shim or "").name or binding.need
    missing = ", ".join(packaged(n) for n in missing_libraries(problems)) or "the library it needs"
    note = (f"so ZLUDA's {shim} is not bound: NVIDIA's own {binding.need} loads in its place and is called "
            f"only when used. Without ZLUDA's {name}: {lost}. Fix: install {missing}")
    return replace(binding, action=UNBOUND, mechanism=MECH_NONE, load_name=None, verdict=WARN,
                   reasons=(*binding.reasons[:1], *reasons, note), problems=(*problems, note))


def packaged(library: str) -> str:
    """A ROCm library with the packages that ship it (Linux; a Windows DLL comes with the HIP SDK)."""
    from zluda_runner.plan.shimdeps import ROCM_PACKAGES  # (the ELF reader: only when planning)

    if library in ROCM_PACKAGES:
        deb, amd = ROCM_PACKAGES[library]
        return f"{library} ({amd}; Debian/Ubuntu: {deb})"
    return f"{library} (AMD's HIP SDK)" if library.lower().endswith(".dll") else library


def unbound_notes(bindings: Sequence[Binding]) -> list[str]:
    """One line per stand-in not bound, for a run's warnings (the plan shows the whole reasons)."""
    notes: dict[str, str] = {}
    for b in bindings:
        if b.action == UNBOUND and b.shim and b.problems:
            notes.setdefault(b.shim, b.problems[-1].removeprefix("so "))
    return list(notes.values())
