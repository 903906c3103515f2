"""Every host filesystem read, optionally under a fake root (``--root DIR`` or ``$ZLUDA_RUNNER_ROOT``).

Tests build trees such as ``opt/rocm/.info/version`` and
``sys/class/kfd/kfd/topology/nodes/1/properties`` in a temporary folder and point
:class:`HostFs` at it; absolute POSIX and Windows paths both map under the root.

Each read is one raw observation of :mod:`zluda_runner.core.observe` (a file's bytes, a folder's names,
a type check, a link): while a launch is derived they are recorded (the recording mode,
:func:`zluda_runner.core.observe.start`), and the launch memo makes exactly those again before it
reuses the launch. So the host's facts are read here only: tests/host/test_fs.py holds that host/ and
the defaults' facts read nothing past this class.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath

from zluda_runner.core import observe
from zluda_runner.core.errors import HostError

ROOT_ENV = "ZLUDA_RUNNER_ROOT"
MAX_SMALL_BYTES = 64 * 1024  # a sysfs attribute, a version file
MAX_TEXT_BYTES = 1 << 20  # os-release and the like


def read_small(path: Path, limit: int = MAX_SMALL_BYTES) -> str | None:
    """A small regular file's text, else None: missing, larger than ``limit``, or not a regular file
    (a FIFO, a device, a folder is refused unread, never waited on)."""
    data = observe.read(path, limit)
    return None if data is None else data.decode("utf-8", errors="replace")


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

    def read_bytes(self, host_path: str | Path, limit: int) -> bytes | None:
        """A host file's bytes (a regular file of at most ``limit`` bytes), else None."""
        return observe.read(self.path(host_path), limit)

    def is_dir(self, host_path: str | Path) -> bool:
        return observe.is_dir(self.path(host_path))

    def is_file(self, host_path: str | Path) -> bool:
        return observe.is_file(self.path(host_path))

    def exists(self, host_path: str | Path) -> bool:
        return observe.exists(self.path(host_path))

    def executable(self, host_path: str | Path) -> bool:
        return observe.executable(self.path(host_path))

    def names(self, host_dir: str | Path) -> list[str]:
        """The entry names of a host folder, sorted; [] when it cannot be listed."""
        return observe.names(self.path(host_dir)) or []

    def readlink_name(self, host_dir: str | Path, name: str) -> str | None:
        """The last component of where the link ``host_dir/name`` points, else None."""
        target = observe.readlink(self.path(f"{host_dir}/{name}"))
        return None if target is None else PurePosixPath(target).name

    def glob(self, host_dir: str | Path, pattern: str) -> list[Path]:
        """The entries of a host folder whose names match ``pattern`` (one component: ``*``,
        ``libMIOpen*``), sorted, as paths on this machine."""
        folder = self.path(host_dir)
        return [folder / n for n in observe.names(folder) or [] if fnmatch.fnmatchcase(n, pattern)]

    # The loader model's questions (:class:`zluda_runner.loader.glibc.LoaderModel` ``files=``), on paths
    # of this machine (already under the root): the library search of a launch reads the host here too.
    def list_real(self, path: str) -> list[str] | None:
        """The names in the folder ``path`` (of this machine): [] where there is none, None where it
        cannot be listed."""
        return observe.names(path)

    def is_file_real(self, path: str) -> bool:
        return observe.is_file(path)

    def head_real(self, path: str, size: int) -> bytes | None:
        """The first ``size`` bytes of the file ``path`` (of this machine), None where it cannot be read."""
        return observe.head(path, size)


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
