"""The host fingerprint a run is filed under, and scrubbing of personal details.

The fingerprint holds OS, kernel, CPU architecture, GPU name and gfx target,
HIP/ROCm version and driver version, plus ``host_id``: a salted SHA-256 of the
host name (never the name itself). Everything that goes into the store passes
through :class:`Scrubber`: the home folder becomes ``~`` and the user's login name
becomes ``<user>``, so a bundle can be shared as is.
"""

from __future__ import annotations

import getpass
import hashlib
import os
import platform
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zluda_runner.results.schema import MAX_TEXT

if TYPE_CHECKING:
    from zluda_runner.host.facts import HostFacts

FINGERPRINT_KEYS = (
    "os",
    "os_version",
    "kernel",
    "arch",
    "gpu_name",
    "gfx",
    "hip_version",
    "rocm_version",
    "driver_version",
    "host_id",
)
_HOME_PATTERNS = (
    re.compile(r"(?<![\w.])/home/[^/\s\"']+"),
    re.compile(r"(?<![\w.])/Users/[^/\s\"']+"),
    re.compile(r"(?i)\b[A-Z]:\\Users\\[^\\\s\"']+"),
)


def host_id(hostname: str) -> str:
    return hashlib.sha256(f"zluda-runner-host:{hostname}".encode()).hexdigest()[:16]


def _login() -> str | None:
    try:
        name = getpass.getuser()
    except Exception:  # no login name in this environment (containers): nothing to scrub
        return None
    return name if len(name) >= 3 else None


class Scrubber:
    """Replaces the home folder and login name in strings (recursively in containers)."""

    def __init__(self, home: str | None = None, user: str | None = None) -> None:
        self.home = home if home is not None else _home()
        self.user = user if user is not None else _login()
        self._user_re = re.compile(rf"(?<![\w]){re.escape(self.user)}(?![\w])") if self.user else None

    def text(self, value: str, limit: int = MAX_TEXT) -> str:
        if self.home and len(self.home) > 1:
            value = value.replace(self.home, "~")
        for pattern in _HOME_PATTERNS:
            value = pattern.sub("~", value)
        if self._user_re is not None:
            value = self._user_re.sub("<user>", value)
        return value if len(value) <= limit else value[: limit - 1] + "…"

    def __call__(self, value: object, depth: int = 0) -> Any:
        if depth > 16:
            return None
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Path):
            return self.text(str(value))
        if isinstance(value, dict):
            return {self.text(str(k), 200): self(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self(v, depth + 1) for v in value]
        if isinstance(value, float) and value != value:  # NaN is not JSON
            return None
        if value is None or isinstance(value, bool | int | float):
            return value
        return self.text(str(value))

    def mapping(self, value: Mapping[str, object]) -> dict[str, Any]:
        """A dict, scrubbed as :meth:`__call__` does (keys bounded to 200 characters)."""
        return {self.text(str(k), 200): self(v, 1) for k, v in value.items()}


def _home() -> str | None:
    try:
        return str(Path.home())
    except (RuntimeError, KeyError):
        return None


def from_doctor_facts(facts: HostFacts) -> dict[str, str]:
    """Fingerprint fields from a doctor's :class:`~zluda_runner.host.facts.HostFacts`: the OS, the
    dedicated GPU (else the first), ROCm's and HIP's versions, the driver's."""
    from zluda_runner.host.hip import format_hip_version

    target = next((g for g in facts.gpus if not g.integrated), facts.gpus[0] if facts.gpus else None)
    hip = facts.hip
    out: dict[str, str | None] = {
        "os": facts.os,
        "os_version": facts.os_version,
        "arch": facts.arch,
        "driver_version": facts.driver_version or (target.driver_version if target else None)
        or (format_hip_version(hip.driver_version) if hip else None),
        "gpu_name": target.name if target else None,
        "gfx": target.gfx if target else None,
        "rocm_version": facts.rocm.version if facts.rocm else None,
        "hip_version": format_hip_version(hip.runtime_version) if hip else None,
    }
    return {k: v for k, v in out.items() if v not in (None, "")}


def fingerprint(
    given: Mapping[str, object] | None = None, doctor_facts: HostFacts | None = None
) -> dict[str, Any]:
    """The host fingerprint: what this machine says cheaply, overlaid with what the caller knows.

    ``given``: flat :data:`FINGERPRINT_KEYS` (plus ``hostname``, which is hashed); ``doctor_facts``: a
    doctor report's facts (what its run records), overlaid first.
    """
    uname = platform.uname()
    fp: dict[str, Any] = {
        "os": {"Linux": "linux", "Windows": "windows", "Darwin": "macos"}.get(
            uname.system, uname.system.lower()
        ),
        "kernel": uname.release,
        "arch": uname.machine,
        "host_id": host_id(socket.gethostname()),
    }
    sources: list[Mapping[str, object]] = [from_doctor_facts(doctor_facts)] if doctor_facts else []
    for source in (*sources, *([given] if given else [])):
        flat = dict(source)
        if "hostname" in flat:
            fp["host_id"] = host_id(str(flat.pop("hostname")))
        fp.update({k: flat[k] for k in FINGERPRINT_KEYS if flat.get(k) not in (None, "")})
    if "gfx" not in fp and os.environ.get("HSA_OVERRIDE_GFX_VERSION"):
        fp["gfx_override"] = os.environ["HSA_OVERRIDE_GFX_VERSION"]
    return Scrubber().mapping(fp)
