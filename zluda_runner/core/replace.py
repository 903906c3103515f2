"""Replacing and removing files that a running program may hold: the one seam for files in use.

On Windows a DLL loaded by a running process cannot be written or deleted, yet it *can* be
renamed, and so can its folder (measured: :mod:`zluda_runner.core.winfiles`). So a change of
several files (``restore``, ``place``, ``cache clean``, ``fetch --reinstall``) first asks which of
them cannot be changed now (:func:`refuse_if_in_use`) and refuses, naming each file and the program
holding it, *before anything changes*. A folder is removed whole (:func:`remove_tree_whole`):
checked, renamed aside in one step (a reader sees it whole or gone), then deleted; a file that
became busy in between is the only thing left, in the aside folder the caller sweeps later.

On POSIX nothing locks a file (:func:`no_locks`); the same code runs, with the same order of steps.
Callers and tests may pass their own ``check`` (an :data:`InUseCheck`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from zluda_runner.core.errors import IN_USE, FileInUseError, InUse, NotWritableError
from zluda_runner.core.fsutil import atomic_open, temp_beside

MAX_NAMED = 5
UNKNOWN_HOLDER_HINT = ("Windows could not say which program holds them: close the program that loaded them "
                       "(a running python, ComfyUI, SD.Next, Jupyter, zluda.exe ...?), then retry")


InUseCheck = Callable[[Sequence[Path]], list[InUse]]
"""Given files, the ones that cannot be replaced or deleted now (an empty list: all can)."""


def no_locks(paths: Sequence[Path]) -> list[InUse]:
    """POSIX: a running program never stops a file from being replaced or deleted."""
    return []


def platform_check() -> InUseCheck:
    """This platform's check: Windows asks the files themselves (and who holds them)."""
    if sys.platform == "win32":
        from zluda_runner.core import winfiles

        return winfiles.in_use
    return no_locks


def files_of(paths: Iterable[Path]) -> list[Path]:
    """Every file ``paths`` stand for: a file itself, each file under a folder (links not followed)."""
    out: list[Path] = []
    for path in map(Path, paths):
        if path.is_symlink() or path.is_file():
            out.append(path)
        elif path.is_dir():
            for dirpath, _dirs, names in os.walk(path):
                out.extend(Path(dirpath) / name for name in names)
    return out


def files_in_use(paths: Iterable[Path], check: InUseCheck | None = None) -> list[InUse]:
    """The files among (or under) ``paths`` that cannot be replaced or deleted now."""
    files = files_of(paths)
    return (check or platform_check())(files) if files else []


def in_use_error(blocked: Sequence[InUse], doing: str, *,
                 outcome: str = "Nothing was changed.") -> FileInUseError:
    """``cannot <doing>: <file> (<why>; held by <program>) ... <outcome>`` with what to close."""
    shown = "; ".join(b.describe() for b in blocked[:MAX_NAMED])
    more = f" (and {len(blocked) - MAX_NAMED} more)" if len(blocked) > MAX_NAMED else ""
    in_use = all(b.reason == IN_USE for b in blocked)
    count = "a file is" if len(blocked) == 1 else f"{len(blocked)} files are"
    state = "in use" if in_use else "in use or locked"
    holders = sorted({h for b in blocked for h in b.holders})
    if holders:
        hint = f"close {', '.join(holders)}, then retry"
    elif in_use:
        hint = UNKNOWN_HOLDER_HINT
    else:
        hint = "make the files writable (not read-only, not held by another program), then retry"
    return FileInUseError(f"cannot {doing}: {count} {state}: {shown}{more}. {outcome}", hint=hint,
                          paths=tuple(b.path for b in blocked))


def refuse_if_in_use(paths: Iterable[Path], doing: str, check: InUseCheck | None = None) -> None:
    """Raise :class:`FileInUseError` (nothing changed) when any file among or under ``paths`` is held."""
    blocked = files_in_use(paths, check)
    if blocked:
        raise in_use_error(blocked, doing)


def _owner(folder: Path) -> str | None:
    """The user owning ``folder`` (POSIX; Windows keeps owners in ACLs: None)."""
    if sys.platform == "win32":
        return None
    try:
        import pwd

        return pwd.getpwuid(os.stat(folder).st_uid).pw_name
    except (OSError, KeyError, ImportError):
        return None


def not_writable_error(folder: Path, exc: OSError, doing: str) -> NotWritableError:
    """``cannot <doing>: <folder> is not writable by this user (<why>). Nothing was changed.`` with who
    can write it: the owner (POSIX), the user who installed the Python (Windows: an administrator for one
    under Program Files), or the folder to make writable."""
    owner = _owner(folder)
    why = exc.strerror or str(exc)
    if sys.platform == "win32":
        hint = ("run zluda-run as the user who installed this Python (for one under Program Files: from a "
                f'terminal started with "Run as administrator"), or give your user write access to {folder}')
    elif owner is not None:
        hint = (f"run zluda-run as {owner}, who owns {folder} (or with sudo), or make {folder} writable for "
                "your user (not a read-only mount)")
    else:
        hint = f"make {folder} writable for your user (not a read-only mount), or run as its owner"
    return NotWritableError(f"cannot {doing}: {folder} is not writable by this user ({why}). Nothing was "
                            "changed.", hint=hint, paths=(str(folder),),
                            details={"folder": str(folder), "owner": owner})


def refuse_if_unwritable(folders: Iterable[Path], doing: str) -> None:
    """Raise :class:`NotWritableError` (nothing changed) when a new file cannot be created in one of
    ``folders``: a change that writes there (a placement into torch/lib, its journal, a hook beside
    torch) asks this first, by creating and deleting one empty temp file, so a folder it may not write
    (a Python under Program Files, another user's, a read-only mount) is said before anything moves.
    A folder that does not exist is the caller's to report."""
    for folder in dict.fromkeys(map(Path, folders)):
        try:
            fd, tmp = temp_beside(folder / "probe")
        except FileNotFoundError:
            continue
        except OSError as exc:
            if isinstance(exc, PermissionError) or exc.errno == errno.EROFS:
                raise not_writable_error(folder, exc, doing) from exc
            raise
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _refusal(path: Path, exc: OSError, check: InUseCheck | None) -> list[InUse] | None:
    """Why an operation on ``path`` failed with ``exc`` if a program holds it (the check's answer;
    on Windows any denial is that), else None: a plain permission fault for the caller."""
    found = files_in_use([path], check) if path.exists() else []
    if found:
        return found
    if sys.platform == "win32":
        return [InUse(str(path), exc.strerror or str(exc))]
    return None


def replace_file(src: Path, dest: Path, doing: str, *, check: InUseCheck | None = None) -> None:
    """Copy ``src`` over ``dest`` atomically and durably (contents and mode); a ``dest`` held by a
    running program is a :class:`FileInUseError` naming it (``dest`` unchanged)."""
    try:
        with atomic_open(dest, "wb", durable=True) as out, open(src, "rb") as inp:
            shutil.copyfileobj(inp, out, 1 << 20)
    except PermissionError as exc:
        blocked = _refusal(Path(dest), exc, check)
        if blocked is None:
            raise
        raise in_use_error(blocked, doing, outcome=f"{dest} was not changed.") from exc
    with contextlib.suppress(OSError):
        shutil.copymode(src, dest)


def remove_file(path: Path, doing: str, *, check: InUseCheck | None = None) -> bool:
    """Delete ``path`` (False: there was none); a held file is a :class:`FileInUseError`."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    except PermissionError as exc:
        blocked = _refusal(Path(path), exc, check)
        if blocked is None:
            raise
        raise in_use_error(blocked, doing, outcome=f"{path} was not changed.") from exc
    return True


def tree_size(path: Path) -> int:
    if path.is_symlink() or not path.is_dir():
        return path.lstat().st_size
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _delete_all(root: Path) -> list[Path]:
    """Delete ``root`` and everything under it, going on past failures; what could not be deleted."""
    if root.is_symlink() or not root.is_dir():
        try:
            _unlink(root)
        except OSError:
            return [root]
        return []
    left: list[Path] = []
    for dirpath, dirs, files in os.walk(root, topdown=False):
        base = Path(dirpath)
        for name in [*files, *(d for d in dirs if (base / d).is_symlink())]:
            try:
                _unlink(base / name)
            except OSError:
                left.append(base / name)
        with contextlib.suppress(OSError):  # not empty: what is left in it is listed
            base.rmdir()
    return left


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    except PermissionError:
        if sys.platform != "win32" or path.is_symlink():
            raise
        os.chmod(path, stat.S_IWRITE)  # a read-only file (an archive's attribute) is ours to delete
        os.unlink(path)


def move_aside(path: Path, aside: Path, doing: str, *, check: InUseCheck | None = None) -> bool:
    """Rename ``path`` (a folder or file) to ``aside`` in one step, after checking that no file under
    it is held by a running program (a rename alone would succeed on Windows and leave a delete
    that fails). False: there was nothing there. Raises :class:`FileInUseError`, nothing changed."""
    path, aside = Path(path), Path(aside)
    if not (path.exists() or path.is_symlink()):
        return False
    refuse_if_in_use([path], doing, check)
    try:
        os.rename(path, aside)
    except PermissionError as exc:
        blocked = _refusal(path, exc, check)
        if blocked is None:
            raise
        raise in_use_error(blocked, doing) from exc
    return True


def delete_all(path: Path) -> list[Path]:
    """Delete ``path`` and everything under it as far as possible (trash: an aside folder, a
    sweep); what could not be deleted (on Windows: files still in use)."""
    return _delete_all(Path(path))


def remove_tree_whole(
    path: Path,
    aside: Path,
    doing: str,
    *,
    again: str,
    check: InUseCheck | None = None,
) -> int:
    """Remove ``path`` (a folder or file) whole; the bytes freed (0: it was not there).

    1. every file under it is checked: one held by a running program refuses with nothing changed;
    2. it is renamed to ``aside`` (same volume; the caller's sweep removes leftovers named so):
       from this instant it is gone, never half there;
    3. ``aside`` is deleted. A file that became busy between 1 and 3 is all that is left, and a
       :class:`FileInUseError` says so (``again``: the command that deletes it later).
    """
    path, aside = Path(path), Path(aside)
    if not (path.exists() or path.is_symlink()):
        return 0
    size = tree_size(path)
    move_aside(path, aside, doing, check=check)
    left = _delete_all(aside)
    if left:
        blocked = files_in_use(left, check) or [InUse(str(p), "could not be deleted") for p in left]
        raise in_use_error(
            blocked, doing,
            outcome=f"{path} is removed (moved to {aside}), but these files could not be deleted; "
            f"`{again}` deletes them once they are free.")
    return size
