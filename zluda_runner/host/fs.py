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

ROOT_ENV = "ZLUDA_RUNNER_ROOT"


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
        try:
            return self.path(host_path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def is_dir(self, host_path: str | Path) -> bool:
        return self.path(host_path).is_dir()

    def exists(self, host_path: str | Path) -> bool:
        return self.path(host_path).exists()

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
            f"fake root {root} is not a folder", hint=f"pass an existing folder to --root (or {ROOT_ENV})"
        )
    return root
