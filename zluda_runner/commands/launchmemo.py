"""The launch memo: a plain launch whose inputs did not change is not derived again.

A plain launch (``zluda-run [OPTIONS] -- CMD``, :func:`zluda_runner.commands.workload.launch_plain`) is a
function of its command line, the current folder, the whole environment, zluda-run's own code, and what
the derivation read: the host through :class:`zluda_runner.host.fs.HostFs`, the warm plan cache entry
and the files its validity check looks at (the command, the target, the release's files), the manifest,
the results store the run's notes come from, the launch's own files in the cache (link folder, redirect
map, start-up code, redirector). Every one of those reads is a raw observation of
:mod:`zluda_runner.core.observe`, recorded while the launch is derived (:class:`Recorder`); with nothing
that cannot be observed again (no warm plan, a server store, a child's answer: a tainted trace), the memo
of the launch is written: those observations and their values, the lines the launch said, and what it
executes (the program, its words, and the environment as the variables the launch sets and unsets: the
user's environment itself is kept only as a digest).

The next launch with the same command line, folder and environment digest (:func:`replay`) makes every
observation again -- re-reads the files, re-lists the folders, never trusting a modification time where
the derivation read the bytes -- and on a full match says the memo's lines and becomes the workload, as
the derivation would have; on any difference, a missing, foreign or corrupt memo, it returns and the
launch is derived again (and remembered anew).

Small on purpose: the hit path imports ``os``, ``sys``, ``marshal`` (the memo's format: plain data of checked
types, read bounded; json would import ``re``), CPython's own SHA-256, the global options' table (the one
reader of the command line) and core (the cache's paths, the observations, the exec); never click,
dataclasses or a stage (tests/commands/test_launch_memo.py).

POSIX only: a Windows launch places DLLs into torch/lib and runs the workload as a child (placement and
its journal are done each time), so it is never remembered.
"""

from __future__ import annotations

import marshal
import os
import sys

from zluda_runner.core import observe

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

SCHEMA = 1  # bumped when what a memo holds or means changes
MEMO_BYTES = 8 << 20  # a memo is read whole, never more than this
MAX_OBSERVATIONS = 200_000
KEEP = 64  # memos kept in the cache (the oldest go first)
POSIX = os.name == "posix" and sys.platform != "win32"
# the lines a replay said before its exec failed: the launch then derived says them once, not twice
ALREADY_SAID: list[str] = []


def env_digest(environ: Mapping[str, str]) -> str:
    """A digest of the whole environment (names and values): any change is another launch."""
    text = "".join(f"{name}\0{environ[name]}\0" for name in sorted(environ))
    return observe.digest(text.encode("utf-8", "surrogateescape"))


def _identity(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, object]:
    """What a memo is the memo of, besides its observations."""
    from zluda_runner.core.version import __version__

    return {"schema": SCHEMA, "version": __version__, "args": list(args), "cwd": os.getcwd(),
            "env": env_digest(environ), "python": [sys.executable, sys.version], "uid": os.getuid(),
            "gid": os.getgid(), "machine": os.uname().machine}  # (the x86-64 gate a launch passes)


def memo_path(args: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """Where the memo of ``zluda-run ARGS`` lives (the cache's ``launches/``, the cache as the launch finds
    it), None for what is no plain launch (:func:`zluda_runner.commands.global_options.recognise_words`)."""
    from zluda_runner.commands.global_options import given_text, recognise_words
    from zluda_runner.core.places import LAUNCHES, cache_folder

    recognised = recognise_words(args)
    if recognised is None:
        return None
    given = given_text("cache_dir", recognised[0], environ)
    cache = os.path.expanduser(given) if given else cache_folder()
    key = "\0".join([str(SCHEMA), *args, "\0", os.getcwd(), env_digest(environ)])
    name = observe.digest(key.encode("utf-8", "surrogateescape"))[:32]
    return os.path.join(cache, LAUNCHES, f"{name}.memo")


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _valid(memo: object, identity: Mapping[str, object]) -> bool:
    """A memo of this launch, in this schema, every field of its type."""
    if not isinstance(memo, dict) or any(memo.get(k) != v for k, v in identity.items()):
        return False
    run, seen, changes = memo.get("exec"), memo.get("observations"), memo.get("set")
    return (isinstance(run, dict) and isinstance(run.get("executable"), str) and _strings(run.get("argv"))
            and bool(run.get("argv")) and isinstance(changes, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in changes.items())
            and _strings(memo.get("unset")) and _strings(memo.get("lines"))
            and isinstance(seen, list) and len(seen) <= MAX_OBSERVATIONS
            and all(isinstance(o, list) and len(o) == 3 for o in seen))


def _unchanged(observations: list[list[object]]) -> bool:
    """Every observation made again gives what it gave."""
    for kind, args, value in observations:
        made, now = observe.remake(kind, args)
        if not made or now != value:
            return False
    return True


def hit(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, object] | None:
    """The memo of ``zluda-run ARGS`` in ``environ`` where every observation it holds is unchanged
    (what :func:`replay` carries out), else None."""
    path = memo_path(args, environ)
    if path is None:
        return None
    from zluda_runner.core.fileread import read_regular

    # marshal: the interpreter's own format (json would import re: +10 ms); a file of this user's cache,
    # trusted as the plan cache is (whose entry chooses the libraries a launch loads), bounded, and taken
    # only as plain data of the types _valid checks (a code object in it is a miss, never run)
    try:
        memo = marshal.loads(read_regular(path, MEMO_BYTES))  # noqa: S302
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not _valid(memo, _identity(args, environ)) or not _unchanged(memo["observations"]):
        return None
    found: dict[str, object] = memo
    return found


def exec_env(environ: Mapping[str, str], memo: Mapping[str, object]) -> dict[str, str]:
    """The workload's environment: ``environ`` (the one the memo's digest names) with the memo's variables
    set and unset, as the derivation composed it."""
    env = dict(environ)
    env.update(memo["set"])  # type: ignore[call-overload]
    for name in memo["unset"]:  # type: ignore[attr-defined]
        env.pop(name, None)
    return env


def replay(args: Sequence[str]) -> None:
    """``zluda-run ARGS`` from its memo where nothing it observed changed: its lines said on stderr, then
    this process becomes the workload (never returns). Returns where there is no such memo, or where the
    workload could not be started: the launch derived then says why (its lines, said already, are not
    said again: :data:`ALREADY_SAID`)."""
    if not POSIX:
        return
    try:
        memo = hit(args, os.environ)
    except Exception:  # a memo that cannot be read or made again is a miss, never an error
        return
    if memo is None:
        return
    for line in memo["lines"]:  # type: ignore[attr-defined]
        print(line, file=sys.stderr, flush=True)
    run: dict[str, list[str] | str] = memo["exec"]  # type: ignore[assignment]
    from zluda_runner.core.become import exec_replacing

    try:
        exec_replacing(str(run["executable"]), list(run["argv"]), exec_env(os.environ, memo))
    except OSError:
        ALREADY_SAID[:] = memo["lines"]  # type: ignore[call-overload]


class Recorder:
    """The derivation of one plain launch, recorded (:func:`zluda_runner.core.observe.start`) from here to its
    exec, which it hears (:data:`zluda_runner.core.become.BEFORE_EXEC`) and remembers (:meth:`remember`);
    the lines it said are :meth:`said`. :meth:`stop` ends it where the launch ends otherwise."""

    def __init__(self, args: Sequence[str]) -> None:
        import warnings

        from zluda_runner.core.become import BEFORE_EXEC

        self.args = list(args)
        self.lines: list[str] = []
        self.identity = _identity(args, os.environ)
        self.trace = observe.start()
        shown = warnings.showwarning

        def showwarning(*a: object, **k: object) -> None:  # a Python warning is said by the derivation only
            observe.taint("a Python warning")
            shown(*a, **k)  # type: ignore[arg-type]

        showwarning.__wrapped__ = shown  # type: ignore[attr-defined]
        warnings.showwarning = showwarning
        BEFORE_EXEC.append(self.remember)

    def said(self, line: str) -> None:
        self.lines.append(line)

    def stop(self) -> None:
        """Stop recording and listening (the exec, or the launch ended another way)."""
        import warnings

        from zluda_runner.core.become import BEFORE_EXEC

        observe.stop()
        if self.remember in BEFORE_EXEC:
            BEFORE_EXEC.remove(self.remember)
        if getattr(warnings.showwarning, "__wrapped__", None) is not None:
            warnings.showwarning = warnings.showwarning.__wrapped__  # type: ignore[attr-defined]

    def remember(self, executable: str, argv: Sequence[str], env: Mapping[str, str]) -> None:
        """Write the memo of the launch this process becomes (``executable`` with ``argv`` and ``env``),
        when it can be made again: nothing tainted, and every observation still what it was (a derivation
        that made a file it had looked for is remembered by the next launch)."""
        try:
            if POSIX:
                self._write(executable, list(argv), dict(env))
        except OSError:  # a read-only cache only costs speed
            pass
        finally:
            self.stop()

    def _write(self, executable: str, argv: list[str], env: dict[str, str]) -> None:
        self._observe_code()
        trace = self.trace
        seen = trace.observations()
        if trace.tainted or len(seen) > MAX_OBSERVATIONS or not _unchanged(seen) \
                or _identity(self.args, os.environ) != self.identity:
            return
        where = memo_path(self.args, os.environ)
        if where is None:
            return
        memo = {**self.identity, "observations": seen, "lines": self.lines,
                "exec": {"executable": executable, "argv": argv},
                "set": {k: v for k, v in env.items() if os.environ.get(k) != v},
                "unset": sorted(k for k in os.environ if k not in env)}
        if exec_env(os.environ, memo) != env:  # the delta composes the launch's environment exactly
            return
        from pathlib import Path

        from zluda_runner.core.fsutil import atomic_write_bytes

        path = Path(where)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, marshal.dumps(memo))
        _prune(path.parent, keep=path)

    @staticmethod
    def _observe_code() -> None:
        """zluda-run's own code as this process ran it: each of its modules loaded, by size and time."""
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for name, module in sorted(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if (name == "zluda_runner" or name.startswith("zluda_runner.")) and isinstance(file, str) \
                    and os.path.abspath(file).startswith(package + os.sep):
                observe.stat_id(file)


def _prune(folder: Path, *, keep: Path) -> None:
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
        if entry.path != str(keep):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
