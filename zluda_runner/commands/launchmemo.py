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

What a memo is, how it is read, recorded and written is :mod:`zluda_runner.commands.memo`'s, shared with
the printing commands' memos; here is what a launch's holds. Small on purpose: the hit path imports what
memo's does and the exec; never click, dataclasses or a stage (tests/commands/test_launch_memo.py).

POSIX only: a Windows launch places DLLs into torch/lib and runs the workload as a child (placement and
its journal are done each time), so it is never remembered.
"""

from __future__ import annotations

import os
import sys

from zluda_runner.commands import memo as memos

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

POSIX = os.name == "posix" and sys.platform != "win32"
# the lines a replay said before its exec failed: the launch then derived says them once, not twice
ALREADY_SAID: list[str] = []


def _identity(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, object]:
    return {**memos.identity(args, environ), "kind": "launch"}


def memo_path(args: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """Where the memo of ``zluda-run ARGS`` lives (the cache's ``launches/``, the cache as the launch finds
    it), None for what is no plain launch (:func:`zluda_runner.commands.global_options.recognise_words`)."""
    from zluda_runner.commands.global_options import recognise_words
    from zluda_runner.core.places import LAUNCHES

    recognised = recognise_words(args)
    if recognised is None:
        return None
    return memos.memo_file(memos.cache_of(recognised[0], environ), LAUNCHES, args, environ)


def _valid(memo: Mapping[str, object]) -> bool:
    """Every field a launch's memo holds of its type."""
    run, changes = memo.get("exec"), memo.get("set")
    return (isinstance(run, dict) and isinstance(run.get("executable"), str)
            and memos.strings(run.get("argv")) and bool(run.get("argv")) and isinstance(changes, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in changes.items())
            and memos.strings(memo.get("unset")) and memos.strings(memo.get("lines")))


def hit(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, object] | None:
    """The memo of ``zluda-run ARGS`` in ``environ`` where every observation it holds is unchanged
    (what :func:`replay` carries out), else None."""
    path = memo_path(args, environ)
    if path is None:
        return None
    memo = memos.load(path, _identity(args, environ))
    return memo if memo is not None and _valid(memo) else None


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
    memo = memos.found(hit, args)
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
    """The derivation of one plain launch, recorded (:class:`zluda_runner.commands.memo.Recording`) from here
    to its exec, which it hears (:data:`zluda_runner.core.become.BEFORE_EXEC`) and remembers
    (:meth:`remember`); the lines it said are :meth:`said`. :meth:`stop` ends it where the launch ends
    otherwise."""

    def __init__(self, args: Sequence[str]) -> None:
        from zluda_runner.core.become import BEFORE_EXEC

        self.args = list(args)
        self.lines: list[str] = []
        self.recording = memos.Recording(args)
        BEFORE_EXEC.append(self.remember)

    def said(self, line: str) -> None:
        self.lines.append(line)

    def stop(self) -> None:
        """Stop recording and listening (the exec, or the launch ended another way)."""
        from zluda_runner.core.become import BEFORE_EXEC

        self.recording.stop()
        if self.remember in BEFORE_EXEC:
            BEFORE_EXEC.remove(self.remember)

    def remember(self, executable: str, argv: Sequence[str], env: Mapping[str, str]) -> None:
        """Write the memo of the launch this process becomes (``executable`` with ``argv`` and ``env``),
        when it can be made again (:meth:`zluda_runner.commands.memo.Recording.observations`)."""
        try:
            if POSIX:
                self._write(executable, list(argv), dict(env))
        except OSError:  # a read-only cache only costs speed
            pass
        finally:
            self.stop()

    def _write(self, executable: str, argv: list[str], env: dict[str, str]) -> None:
        seen = self.recording.observations()
        where = memo_path(self.args, os.environ)
        if seen is None or where is None:
            return
        memo = {**_identity(self.args, os.environ), "observations": seen, "lines": self.lines,
                "exec": {"executable": executable, "argv": argv},
                "set": {k: v for k, v in env.items() if os.environ.get(k) != v},
                "unset": sorted(k for k in os.environ if k not in env)}
        if exec_env(os.environ, memo) != env:  # the delta composes the launch's environment exactly
            return
        memos.save(where, memo)
