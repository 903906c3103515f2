"""What the loader model (:class:`zluda_runner.loader.glibc.LoaderModel`) asks of the file system: a folder's
names, whether a path is a file, a file's first bytes (:class:`LoaderFiles`). :class:`OsFiles` asks
:mod:`os`; a launch's library search passes :class:`zluda_runner.host.fs.HostFs`, the host's one reader,
whose every answer is an observation a launch memo makes again."""

from __future__ import annotations

import os
from typing import Protocol


class LoaderFiles(Protocol):
    """What the model asks of the file system (paths of this machine): a folder's names ([] none there,
    None not listable), whether a path is a file, a file's first bytes. :class:`OsFiles` asks :mod:`os`;
    a launch's library search passes :class:`zluda_runner.host.fs.HostFs`, the host's one reader."""

    def list_real(self, path: str) -> list[str] | None: ...

    def is_file_real(self, path: str) -> bool: ...

    def head_real(self, path: str, size: int) -> bytes | None: ...


class OsFiles:
    """:class:`LoaderFiles` as :mod:`os` answers."""

    def list_real(self, path: str) -> list[str] | None:
        try:
            return os.listdir(path)
        except FileNotFoundError:
            return []
        except OSError:  # e.g. a folder that may be searched but not listed
            return None

    def is_file_real(self, path: str) -> bool:
        return os.path.isfile(path)

    def head_real(self, path: str, size: int) -> bytes | None:
        try:
            with open(path, "rb") as fh:
                return fh.read(size)
        except OSError:
            return None
