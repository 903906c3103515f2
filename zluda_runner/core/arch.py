"""ZLUDA, its shims and our trampolines are x86-64 only: one gate says so."""

from __future__ import annotations

import os

from zluda_runner.core.errors import ZludaRunnerError

SUPPORTED = ("x86_64", "amd64")


def machine() -> str:
    """This host's processor, as ``platform.machine()`` names it (POSIX: ``uname -m``, read without the
    platform module, which a launch does not otherwise need)."""
    if hasattr(os, "uname"):
        return os.uname().machine.lower()
    import platform

    return platform.machine().lower()


def is_supported(name: str | None = None) -> bool:
    return (name or machine()) in SUPPORTED


class UnsupportedArchError(ZludaRunnerError):
    """This host's processor is not x86-64."""


def require_x86_64(what: str = "ZLUDA") -> None:
    """Raise :class:`UnsupportedArchError` unless this host is x86-64."""
    if not is_supported():
        raise UnsupportedArchError(
            f"{what} is x86-64 only; this machine is {machine() or 'unknown'}",
            hint="run zluda-run on an x86-64 (AMD64) machine; inspection of a copied target "
            "({cmd:inspect PATH}) and choosing a release ({cmd:releases}) work anywhere",
        )
