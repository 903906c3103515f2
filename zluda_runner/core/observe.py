"""Raw observations of the file system, one function per kind, recorded while a launch is derived.

A kind is what a reader asks of one path: its bytes (:func:`read`, up to a bound), the first bytes
(:func:`head`), a folder's names (:func:`names`), whether it is a folder, a file or anything
(:func:`is_dir`, :func:`is_file`, :func:`exists`), where a link points (:func:`readlink`), a file's size
and modification time (:func:`stat_id`: never its inode or device, which Windows and Wine may report as 0),
what a command word runs on a search path (:func:`which`), a path with its links resolved
(:func:`realpath`), whether it may be executed (:func:`executable`), today's date (:func:`today`: a
listing says how old the manifest is), values of the Windows registry (:func:`registry_values`). The
readers of a launch's inputs make their observations here: the host's through
:class:`zluda_runner.host.fs.HostFs` (the one host reader), the plan cache, the command's file, the
manifest, the results store, the launch's own files in the cache.

While a :class:`Trace` is started (:func:`start`), every observation is recorded as ``[kind, args,
value]`` (``value``: a digest of bytes or names, never the bytes); what cannot be observed again (a
child's output, a server) :func:`taint`\\ s the trace. :func:`remake` makes a recorded observation
again: the memos (:mod:`zluda_runner.commands.memo`: a plain launch's, a printing command's) re-make every
one and compare.

Small on purpose (``os``; the rest on first use): the memos' hit path imports it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

Value = object  # what a kind records: a digest, a bool, a text, a list of ints, or None


class Trace:
    """What one derivation observed: ``seen`` (``(kind, args)`` -> the value first seen) and why it
    cannot be re-made (``tainted``)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, tuple[object, ...]], Value] = {}
        self.tainted: list[str] = []

    def observations(self) -> list[list[object]]:
        """``[kind, [args...], value]`` in the order first made."""
        return [[kind, list(args), value] for (kind, args), value in self.seen.items()]


_TRACE: list[Trace] = []  # the trace being recorded (at most one)
_MAKING: list[str] = []  # the kind being made now (what the memos' audit hook lets through)


def start() -> Trace:
    """Start recording every observation (until :func:`stop`)."""
    trace = Trace()
    _TRACE[:] = [trace]
    return trace


def stop() -> None:
    _TRACE.clear()


def recording() -> bool:
    return bool(_TRACE)


def making() -> str | None:
    """The kind of observation being made right now, else None (an audited read inside one is observed)."""
    return _MAKING[-1] if _MAKING else None


def taint(reason: str) -> None:
    """Something the derivation depends on cannot be observed again (a server, a child's output): the
    trace must not be replayed."""
    if _TRACE:
        _TRACE[0].tainted.append(reason)


def digest(data: bytes) -> str:
    """SHA-256 of ``data``, in hex (CPython's own ``_sha256``/``_sha2`` where present: no OpenSSL loaded)."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # CPython up to 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]  # 3.12 on
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment,unused-ignore]
    return str(sha256(data).hexdigest())


def _digest_names(found: list[str] | None) -> str | None:
    return None if found is None else digest("\0".join(found).encode("utf-8", "surrogateescape"))


def _read(path: str, limit: int) -> bytes | None:
    from zluda_runner.core.fileread import read_regular

    try:
        return read_regular(path, limit)
    except OSError:
        return None


def _head(path: str, size: int) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return None


def _names(path: str) -> list[str] | None:
    try:
        with os.scandir(path) as entries:
            return sorted(e.name for e in entries)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError:  # there but not listable (searched, not read)
        return None


def _is_dir(path: str) -> bool:
    try:
        return os.path.isdir(path)
    except (OSError, ValueError):
        return False


def _is_file(path: str) -> bool:
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


def _exists(path: str) -> bool:
    try:
        return os.path.exists(path)
    except (OSError, ValueError):
        return False


def _readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except (OSError, ValueError):
        return None


def _stat_id(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [st.st_size, st.st_mtime_ns]


def _runs(path: str) -> bool:
    return os.path.exists(path) and os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path)


def _which(word: str, search: str | None) -> str | None:
    """:func:`shutil.which`'s answer (on POSIX made here as it makes it, without importing shutil)."""
    if os.name != "posix":
        import shutil

        return shutil.which(word, path=search)
    if os.path.dirname(word):
        return word if _runs(word) else None
    if search is None:
        search = os.environ.get("PATH")
        if search is None:
            try:
                search = os.confstr("CS_PATH")
            except (AttributeError, ValueError):
                search = os.defpath
    if not search:
        return None
    seen: set[str] = set()
    for folder in search.split(os.pathsep):
        if folder not in seen:
            seen.add(folder)
            name = os.path.join(folder, word)
            if _runs(name):
                return name
    return None


def _realpath(path: str) -> str:
    from zluda_runner.core.places import real_path

    return real_path(path)


def _executable(path: str) -> bool:
    try:
        return os.access(path, os.X_OK)
    except (OSError, ValueError):
        return False


def _today() -> list[int]:
    """Today's date where this process is (what ``datetime.date.today()`` says), as ``[year, month, day]``."""
    import time

    return list(time.localtime()[:3])


def _registry_values(key: str, names: Sequence[str]) -> list[list[object]] | None:
    """Each subkey of ``HKEY_LOCAL_MACHINE\\key`` (at most 256), in the registry's order, with the values
    ``names`` hold there (None where one is missing or the subkey cannot be opened); None where ``key``
    cannot be opened (or on a system without a registry)."""
    try:
        import winreg  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    found: list[list[object]] = []
    _MAKING.append("registry")
    try:
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, key) as top:  # type: ignore[attr-defined,unused-ignore]
            for i in range(min(winreg.QueryInfoKey(top)[0], 256)):  # type: ignore[attr-defined,unused-ignore]
                sub = winreg.EnumKey(top, i)  # type: ignore[attr-defined,unused-ignore]
                values: list[object] = []
                try:
                    with winreg.OpenKey(top, sub) as one:  # type: ignore[attr-defined,unused-ignore]
                        for name in names:
                            try:
                                value = winreg.QueryValueEx(one, name)[0]  # type: ignore[attr-defined,unused-ignore]
                            except OSError:
                                value = None
                            values.append(value if isinstance(value, str | int) else None)
                except OSError:
                    values = [None] * len(names)
                found.append([sub, values])
    except OSError:
        return None
    finally:
        _MAKING.pop()
    return found


def _hex(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


def _same(value: object) -> object:
    return value


# kind -> (the observation, how it is recorded)
_KINDS: dict[str, tuple[Callable[..., object], Callable[[object], Value]]] = {
    "read": (_read, lambda v: None if v is None else digest(v)),  # type: ignore[arg-type]
    "head": (_head, _hex),  # type: ignore[dict-item]
    "names": (_names, _digest_names),  # type: ignore[dict-item]
    "is_dir": (_is_dir, _same),
    "is_file": (_is_file, _same),
    "exists": (_exists, _same),
    "readlink": (_readlink, _same),
    "stat": (_stat_id, _same),
    "which": (_which, _same),
    "realpath": (_realpath, _same),
    "executable": (_executable, _same),
    "today": (_today, _same),
    "registry": (_registry_values, _same),
}


def _observe(kind: str, *args: object) -> object:
    make, record = _KINDS[kind]
    raw = make(*args)
    if _TRACE:
        _TRACE[0].seen.setdefault((kind, args), record(raw))
    return raw


def _text(path: str | os.PathLike[str]) -> str:
    return os.fspath(path)


def read(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` (at most ``limit``: :func:`~zluda_runner.core.fileread.
    read_regular`), else None (missing, larger, not a regular file)."""
    return _observe("read", _text(path), limit)  # type: ignore[return-value]


def head(path: str | os.PathLike[str], size: int) -> bytes | None:
    """The first ``size`` bytes of ``path`` (fewer where it is shorter), None where it cannot be opened."""
    return _observe("head", _text(path), size)  # type: ignore[return-value]


def names(path: str | os.PathLike[str]) -> list[str] | None:
    """The names in the folder ``path``, sorted: [] where there is no such folder, None where it is there
    but cannot be listed."""
    return _observe("names", _text(path))  # type: ignore[return-value]


def is_dir(path: str | os.PathLike[str]) -> bool:
    return bool(_observe("is_dir", _text(path)))


def is_file(path: str | os.PathLike[str]) -> bool:
    return bool(_observe("is_file", _text(path)))


def exists(path: str | os.PathLike[str]) -> bool:
    return bool(_observe("exists", _text(path)))


def readlink(path: str | os.PathLike[str]) -> str | None:
    """Where the link ``path`` points (as written in it), None where it is no link."""
    return _observe("readlink", _text(path))  # type: ignore[return-value]


def stat_id(path: str | os.PathLike[str]) -> list[int] | None:
    """``[size, modification time (ns)]`` of ``path`` (links followed), None where it is not there."""
    return _observe("stat", _text(path))  # type: ignore[return-value]


def which(word: str, search: str | None = None) -> str | None:
    """The file ``word`` runs, found on ``search`` (default ``$PATH``) as :func:`shutil.which` finds it."""
    return _observe("which", word, search)  # type: ignore[return-value]


def realpath(path: str | os.PathLike[str]) -> str:
    """``path`` absolute with its links resolved (:func:`zluda_runner.core.places.real_path`)."""
    return str(_observe("realpath", _text(path)))


def executable(path: str | os.PathLike[str]) -> bool:
    return bool(_observe("executable", _text(path)))


def today() -> tuple[int, int, int]:
    """Today's date here, ``(year, month, day)``: what a view that counts days from a date depends on."""
    found: list[int] = _observe("today")  # type: ignore[assignment]
    return found[0], found[1], found[2]


def registry_values(key: str, names: tuple[str, ...]) -> list[list[object]] | None:
    """``[subkey, [value of each of names, or None]]`` for each subkey of ``HKEY_LOCAL_MACHINE\\key``; None
    where the key cannot be opened (or there is no registry)."""
    return _observe("registry", key, tuple(names))  # type: ignore[return-value]


def note_file(path: str | os.PathLike[str], limit: int) -> None:
    """Record ``path``'s bytes (a file the derivation read another way, or wrote: it must be as it is now)."""
    if _TRACE:
        read(path, limit)


def remake(kind: object, args: object) -> tuple[bool, Value]:
    """``(True, value)``: the recorded observation ``kind`` of ``args`` made again, as it records it;
    ``(False, None)`` for a kind or arguments this version does not make."""
    if not isinstance(kind, str) or kind not in _KINDS or not isinstance(args, list):
        return False, None
    make, record = _KINDS[kind]
    try:
        return True, record(make(*args))
    except (TypeError, ValueError, OSError):
        return False, None

