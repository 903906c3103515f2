"""Every host filesystem read, optionally under a fake root (``--root DIR`` or ``$ZLUDA_RUNNER_ROOT``).

Tests build trees such as ``opt/rocm/.info/version`` and
``sys/class/kfd/kfd/topology/nodes/1/properties`` in a temporary folder and point
:class:`HostFs` at it; absolute POSIX and Windows paths both map under the root.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath

from zluda_runner.core.errors import HostError
from zluda_runner.core.fsutil import read_regular

ROOT_ENV = "ZLUDA_RUNNER_ROOT"
MAX_SMALL_BYTES = 64 * 1024  # a sysfs attribute, a version file
MAX_TEXT_BYTES = 1 << 20  # os-release and the like


def read_small(path: Path, limit: int = MAX_SMALL_BYTES) -> str | None:
    """A small regular file's text, else None: missing, larger than ``limit``, or not a regular file
    (a FIFO, a device, a folder is refused unread, never waited on)."""
    try:
        return read_regular(path, limit).decode("utf-8", errors="replace")
    except OSError:
        return None


class HostFs:
    """Absolute host paths (POSIX or Windows) mapped under an optional fake root."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root

    def path(self, host_path: str | Path) -> Path:
        if self.root is None:
            return Path(host_path)
        text = str(host_path)
        pure = PureWindowsPath(text) if re.match(r"^[A-Za-z]:[\\/]", text) else PurePosixPath(text)
        parts = pure.parts[1:] if pure.anchor else pure.parts
        return self.root.joinpath(*parts)

    def read_text(self, host_path: str | Path) -> str | None:
        """A text file of the host (up to 1 MiB, regular files only), else None."""
        return read_small(self.path(host_path), MAX_TEXT_BYTES)

    def read_small(self, host_path: str | Path) -> str | None:
        """A small file of the host (a sysfs attribute, a version file: up to 64 KiB), else None."""
        return read_small(self.path(host_path))

    def is_dir(self, host_path: str | Path) -> bool:
        try:
            return self.path(host_path).is_dir()
        except OSError:
            return False

    def exists(self, host_path: str | Path) -> bool:
        try:
            return self.path(host_path).exists()
        except OSError:
            return False

    def names(self, host_dir: str | Path) -> list[str]:
        """The entry names of a host folder, sorted; [] when it cannot be listed."""
        try:
            return sorted(e.name for e in os.scandir(self.path(host_dir)))
        except OSError:
            return []

    def readlink_name(self, host_dir: str | Path, name: str) -> str | None:
        """The last component of where the link ``host_dir/name`` points, else None."""
        try:
            return PurePosixPath(os.readlink(self.path(f"{host_dir}/{name}"))).name
        except OSError:
            return None

    def glob(self, host_dir: str | Path, pattern: str) -> list[Path]:
        folder = self.path(host_dir)
        try:
            return sorted(folder.glob(pattern)) if folder.is_dir() else []
        except OSError:
            return []


def root_from_env(value: str | None = None) -> Path | None:
    """The fake root named by ``value`` (else ``$ZLUDA_RUNNER_ROOT``); None for the real host."""
    raw = value if value is not None else os.environ.get(ROOT_ENV)
    if not raw:
        return None
    root = Path(raw).expanduser()
    if not root.is_dir():
        raise HostError(
            f"fake root {root} is not a folder",
            hint=f"pass an existing folder to {{opt:root}} (or {ROOT_ENV})",
        )
    return root
