"""The target profile: what a CUDA build needs, under which names, found where."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from zluda_runner.core.serial import JsonMixin

PROFILE_SCHEMA = 1
# What the target is built for; "unknown": not inspected (a command planned as it would run)
Build = Literal["cuda", "rocm", "cpu", "none", "unknown"]
# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class TorchInfo(JsonMixin):
    version: str | None
    cuda: str | None
    hip: str | None
    path: str | None
    git_version: str | None = None


@dataclass(frozen=True)
class PythonStartup(JsonMixin):
    """How a Windows or Linux interpreter builds ``sys.path`` at start-up: what a preload can rely on.

    ``pth_file``: the ``._pth`` file that isolates it (the embeddable/portable layout of ComfyUI and
    SD.Next), None for a regular interpreter or venv. Such an interpreter ignores ``PYTHONPATH``;
    ``site_enabled`` says whether its ``._pth`` has an active ``import site`` line, so that ``.pth``
    files in ``site_packages`` (and a ``sitecustomize`` on ``sys_path``) are processed.
    """

    pth_file: str | None = None
    honours_pythonpath: bool = True
    site_enabled: bool = True
    sys_path: tuple[str, ...] = ()
    site_packages: tuple[str, ...] = ()

    @property
    def portable(self) -> bool:
        return self.pth_file is not None


@dataclass(frozen=True)
class Resolved(JsonMixin):
    """Where the loader takes a library from: ``via`` is the rule, ``via_object`` whose rule."""

    path: str | None
    via: str
    via_object: str | None = None
    rule: str = ""
    tried: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reach(JsonMixin):
    """How one requesting object reaches a library on its own (ignoring what is already loaded)."""

    requester: str
    path: str | None
    via: str
    via_object: str | None
    rule: str


@dataclass(frozen=True)
class LibraryNeed(JsonMixin):
    """One CUDA library name the build asks for."""

    name: str
    family: str
    major: int | None
    requested_by: tuple[str, ...] = ()
    versions_required: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    resolved: Resolved | None = None
    reach: tuple[Reach, ...] = ()


@dataclass(frozen=True)
class DlopenNeed(JsonMixin):
    """A library opened at run time by name (not in any import table)."""

    name: str
    family: str
    opened_by: tuple[str, ...]
    reason: str
    resolved: Resolved | None = None


@dataclass(frozen=True)
class ObjectInfo(JsonMixin):
    path: str
    format: Literal["elf", "pe"]
    soname: str | None = None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()


@dataclass(frozen=True)
class TargetProfile(JsonMixin):
    """What a CUDA build needs, under which names, found where."""

    schema: int = PROFILE_SCHEMA
    python: str | None = None
    python_version: str | None = None
    os: str = "linux"
    site_packages: tuple[str, ...] = ()
    torch: TorchInfo | None = None
    startup: PythonStartup | None = None  # how the interpreter starts (``._pth``), None if unknown
    build: Build = "none"
    cuda_version: str | None = None
    cuda_major: int | None = None
    roots: tuple[str, ...] = ()
    libraries: tuple[LibraryNeed, ...] = ()
    objects: tuple[ObjectInfo, ...] = ()
    dlopened: tuple[DlopenNeed, ...] = ()
    warnings: tuple[str, ...] = ()

    def library(self, name: str) -> LibraryNeed | None:
        return next((lib for lib in self.libraries if lib.name == name), None)

    def by_family(self) -> dict[str, list[LibraryNeed]]:
        out: dict[str, list[LibraryNeed]] = {}
        for lib in self.libraries:
            out.setdefault(lib.family, []).append(lib)
        return out


