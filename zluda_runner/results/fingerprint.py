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
from pathlib import Path
from typing import Any

from zluda_runner.results.schema import MAX_TEXT

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

    def __call__(self, value: Any, depth: int = 0) -> Any:
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

    def mapping(self, value: dict[str, Any]) -> dict[str, Any]:
        """A dict, scrubbed as :meth:`__call__` does (keys bounded to 200 characters)."""
        return {self.text(str(k), 200): self(v, 1) for k, v in value.items()}


def _home() -> str | None:
    try:
        return str(Path.home())
    except (RuntimeError, KeyError):
        return None


def _hip_text(version: Any) -> str | None:
    if isinstance(version, int):
        from zluda_runner.host.hip import format_hip_version

        return format_hip_version(version)
    return None if version is None else str(version)


def from_doctor_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """Fingerprint fields from a doctor ``HostFacts.to_dict()``."""
    out: dict[str, Any] = {
        "os": facts.get("os"),
        "os_version": facts.get("os_version"),
        "arch": facts.get("arch"),
        "driver_version": facts.get("driver_version"),
    }
    gpus = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    target = next((g for g in gpus if not g.get("integrated")), gpus[0] if gpus else None)
    if target:
        out["gpu_name"] = target.get("name")
        out["gfx"] = target.get("gfx")
        out["driver_version"] = out["driver_version"] or target.get("driver_version")
    rocm = facts.get("rocm") or {}
    if isinstance(rocm, dict):
        out["rocm_version"] = rocm.get("version")
    hip = facts.get("hip") or {}
    if isinstance(hip, dict):
        out["hip_version"] = _hip_text(hip.get("runtime_version"))
        if not out["driver_version"]:
            out["driver_version"] = _hip_text(hip.get("driver_version"))
    return {k: v for k, v in out.items() if v not in (None, "")}


def fingerprint(
    given: dict[str, Any] | None = None, doctor_facts: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The host fingerprint: what this machine says cheaply, overlaid with what the caller knows.

    ``given`` may be a flat dict with :data:`FINGERPRINT_KEYS` (plus ``hostname``, which is
    hashed) or a doctor ``HostFacts`` dict (recognised by its ``gpus`` list).
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
    for source in (doctor_facts, given):
        if not source:
            continue
        flat = from_doctor_facts(source) if "gpus" in source else dict(source)
        if "hostname" in flat:
            fp["host_id"] = host_id(str(flat.pop("hostname")))
        fp.update({k: flat[k] for k in FINGERPRINT_KEYS if flat.get(k) not in (None, "")})
    if "gfx" not in fp and os.environ.get("HSA_OVERRIDE_GFX_VERSION"):
        fp["gfx_override"] = os.environ["HSA_OVERRIDE_GFX_VERSION"]
    return Scrubber().mapping(fp)
