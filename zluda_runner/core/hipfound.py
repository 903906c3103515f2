"""The host's HIP as the user reads it, and the ways to another one: what the host stage finds and the
release stage judges (a leaf: it imports nothing of the package)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HipRoute:
    """A way to another HIP on this host: what to do (``how``), the HIP versions it gives, and the kind of
    install they come from (``origin``: rocm, hip-sdk, distribution; the GPU x HIP rules' ``hip_from``)."""

    how: str
    gives: tuple[str, ...]
    origin: str | None = None


@dataclass(frozen=True)
class HipFound:
    """The host's HIP as the user should read it (``HIP 5.2 from Debian's libamdhip64-5 package``),
    and the ways to another one on this system (:func:`zluda_runner.host.quick.hip_found`)."""

    version: str | None
    text: str
    routes: tuple[HipRoute, ...] = ()
    origin: str | None = None  # HostHip.kind: rocm, hip-sdk, distribution (the GPU x HIP rules' hip_from)
    path: str | None = None  # the ROCm / HIP SDK folder (a distribution's: its library folder)
