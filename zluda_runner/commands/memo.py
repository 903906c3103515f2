"""What a memo of ``zluda-run`` is, one home for both kinds: a plain launch's
(:mod:`zluda_runner.commands.launchmemo`: what it execs) and a printing command's
(:mod:`zluda_runner.commands.commandmemo`: what ``releases`` says and its exit code).

A memo is the memo of one command line (:func:`identity`: its words, the current folder, a digest of the
whole environment, zluda-run's version, the interpreter with its ``sys.path`` at start, its flags and
finders, the user and the machine) and holds the observations its derivation made
(:mod:`zluda_runner.core.observe`): :func:`load` takes a memo only where every field is of its type, the
identity is this process's and every observation made again gives what it gave; a missing, foreign,
corrupt or oversized memo is a miss, never an error. :class:`Recording` records a derivation: what cannot
be observed again taints it (a Python warning, a child process, a socket, a registry read outside the
observations: an audit hook), and :func:`save` writes the memo only where nothing did, every observation
is still what it was and the identity has not changed; a read-only cache costs only speed. At most
:data:`KEEP` memos per folder (the oldest go).

Small on purpose: a hit imports ``os``, ``sys``, ``marshal`` (plain data of checked types, read bounded;
json would import ``re``), CPython's own SHA-256, the global options' table and core.
"""

from __future__ import annotations

import marshal
import os
import sys

from zluda_runner.core import observe

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

SCHEMA = 2  # bumped when what a memo holds or means changes
MEMO_BYTES = 8 << 20  # a memo is read whole, never more than this
MAX_OBSERVATIONS = 200_000
KEEP = 64  # memos kept in each memo folder of the cache (the oldest go first)
# audited events that read what no observation makes again (a registry read made as an observation is one)
TAINTING = ("subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.exec", "os.fork",
            "os.startfile", "socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "winreg.")
_HOOKED: list[bool] = []


def env_digest(environ: Mapping[str, str]) -> str:
    """A digest of the whole environment (names and values): any change is another command line."""
    text = "".join(f"{name}\0{environ[name]}\0" for name in sorted(environ))
    return observe.digest(text.encode("utf-8", "surrogateescape"))


def _user() -> list[object]:
    """Who runs it: the user and group ids on POSIX; on Windows (no ids) the account the process runs as."""
    if hasattr(os, "getuid"):
        return [os.getuid(), os.getgid()]
    try:
        return [os.getlogin()]
    except OSError:
        return [None]


def identity(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, object]:
    """What a memo is the memo of, besides its observations."""
    from zluda_runner.core.version import __version__

    return {"schema": SCHEMA, "version": __version__, "args": list(args), "cwd": os.getcwd(),
            "env": env_digest(environ), "python": [sys.executable, sys.version], "path": list(sys.path),
            "flags": [*sys.flags, *sys.warnoptions],
            "finders": [getattr(f, "__module__", "") + "." + getattr(f, "__qualname__", type(f).__name__)
                        for f in sys.meta_path],
            "user": _user(), "machine": os.uname().machine if hasattr(os, "uname") else sys.platform}


def memo_file(cache: str, folder: str, args: Sequence[str], environ: Mapping[str, str]) -> str:
    """The memo of ``zluda-run ARGS`` in the cache folder's ``folder``."""
    key = "\0".join([str(SCHEMA), folder, *args, "\0", os.getcwd(), env_digest(environ)])
    name = observe.digest(key.encode("utf-8", "surrogateescape"))[:32]
    return os.path.join(cache, folder, f"{name}.memo")


def cache_of(given: Mapping[str, str | bool], environ: Mapping[str, str]) -> str:
    """The cache folder the command line names (``--cache-dir``, else ``ZLUDA_RUNNER_CACHE``, else the
    platform's), as the command finds it."""
    from zluda_runner.commands.global_options import given_text
    from zluda_runner.core.places import cache_folder

    text = given_text("cache_dir", given, environ)
    return os.path.expanduser(text) if text else cache_folder()


def strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def unchanged(observations: list[list[object]]) -> bool:
    """Every observation made again gives what it gave."""
    for kind, args, value in observations:
        made, now = observe.remake(kind, args)
        if not made or now != value:
            return False
    return True


def load(path: str, ident: Mapping[str, object]) -> dict[str, object] | None:
    """The memo at ``path`` where it is one of ``ident`` and nothing it observed changed, else None."""
    from zluda_runner.core.fileread import read_regular

    # marshal: the interpreter's own format (json would import re); a file of this user's cache, trusted as
    # the plan cache is, bounded, and taken only as plain data of the types checked (a code object is a miss)
    try:
        memo = marshal.loads(read_regular(path, MEMO_BYTES))  # noqa: S302
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(memo, dict) or any(memo.get(k) != v for k, v in ident.items()):
        return None
    seen = memo.get("observations")
    if not (isinstance(seen, list) and len(seen) <= MAX_OBSERVATIONS
            and all(isinstance(o, list) and len(o) == 3 for o in seen)) or not unchanged(seen):
        return None
    return memo


def found(hit: Callable[[Sequence[str], Mapping[str, str]], dict[str, object] | None],
          args: Sequence[str]) -> dict[str, object] | None:
    """``hit(args, os.environ)``: the memo to replay, or None -- also where it cannot be read or made again
    (a miss, never an error)."""
    try:
        return hit(args, os.environ)
    except Exception:
        return None


def _audited(event: str, _args: object) -> None:
    if observe.recording() and event.startswith(TAINTING) and observe.making() is None:
        observe.taint(event)


class Recording:
    """One derivation recorded (:func:`zluda_runner.core.observe.start`) until :meth:`stop`; a Python
    warning said, or an audited read of what cannot be observed again, taints it."""

    def __init__(self, args: Sequence[str]) -> None:
        import warnings

        self.args = list(args)
        self.identity = identity(args, os.environ)
        self.trace = observe.start()
        if not _HOOKED:
            sys.addaudithook(_audited)  # (for the process's life: it acts only while a trace records)
            _HOOKED.append(True)
        shown = warnings.showwarning

        def showwarning(*a: object, **k: object) -> None:  # a Python warning is said by the derivation only
            observe.taint("a Python warning")
            shown(*a, **k)  # type: ignore[arg-type]

        showwarning.__wrapped__ = shown  # type: ignore[attr-defined]
        warnings.showwarning = showwarning

    def stop(self) -> None:
        import warnings

        observe.stop()
        if getattr(warnings.showwarning, "__wrapped__", None) is not None:
            warnings.showwarning = warnings.showwarning.__wrapped__  # type: ignore[attr-defined]

    def observations(self) -> list[list[object]] | None:
        """What the memo keeps, where it can be made again: nothing tainted, zluda-run's own code observed,
        every observation still what it was (a derivation that made a file it had looked for is remembered
        by the next run) and the identity unchanged; else None."""
        _observe_code()
        trace = self.trace
        seen = trace.observations()
        if trace.tainted or len(seen) > MAX_OBSERVATIONS or not unchanged(seen) \
                or identity(self.args, os.environ) != self.identity:
            return None
        return seen


def save(where: str, memo: Mapping[str, object]) -> None:
    """Write the memo (atomically), then keep at most :data:`KEEP` in its folder. OSError: not written."""
    from pathlib import Path

    from zluda_runner.core.fsutil import atomic_write_bytes

    path = Path(where)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, marshal.dumps(dict(memo)))
    _prune(str(path.parent), keep=str(path))


def _observe_code() -> None:
    """zluda-run's own code as this process ran it: each of its modules loaded, by size and time."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name, module in sorted(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (name == "zluda_runner" or name.startswith("zluda_runner.")) and isinstance(file, str) \
                and os.path.abspath(file).startswith(package + os.sep):
            observe.stat_id(file)


def _prune(folder: str, *, keep: str) -> None:
    """At most :data:`KEEP` memos: the oldest others go."""
    import contextlib

    try:
        memos = [e for e in os.scandir(folder) if e.name.endswith(".memo") and e.is_file()]
    except OSError:
        return
    if len(memos) <= KEEP:
        return
    memos.sort(key=lambda e: e.stat().st_mtime_ns)
    for entry in memos[:len(memos) - KEEP]:
        if entry.path != keep:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
