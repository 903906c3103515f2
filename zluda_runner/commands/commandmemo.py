"""The command memo: a printing command whose inputs did not change is not derived again.

``zluda-run releases [OPTIONS]`` (:data:`zluda_runner.commands.REMEMBERED_COMMANDS`) says what is a function
of its command line, the current folder, the whole environment, zluda-run's own code, the view it is said
in and what its derivation read -- the manifest, the host's HIP and GPUs (files, and on Windows the
registry), the target interpreter's torch, the results store, today's date -- each read a raw observation
of :mod:`zluda_runner.core.observe`. The derivation is recorded (:class:`Recorder`): what it writes on
stdout and stderr (through the CLI's streams, :class:`zluda_runner.core.textio.Sink`), in order, and its
exit code; where nothing tainted it (a child process, a socket, a server store, a Python warning, an
error) the memo is written to the cache's ``commands/``: the identity (:func:`zluda_runner.commands.memo.
identity`, and the view: whether stdout and stderr are terminals, their encodings, the width a view fits),
the observations, the text and the code.

The next identical command line (:func:`replay`) makes every observation again and, on a full match, writes
the remembered text and exits with the code, importing what the launch memo's hit path imports (never
click, dataclasses or a stage: tests/commands/test_command_memo.py); on any difference, or a missing,
foreign or corrupt memo, the command is derived again (and remembered anew). On Linux and Windows alike.
"""

from __future__ import annotations

import os
import sys

from zluda_runner.commands import memo as memos

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def memo_path(args: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """Where the memo of ``zluda-run ARGS`` lives (the cache's ``commands/``, the cache as the command finds
    it); None for a command line that is not remembered: another command, or ``--cache-dir`` after the
    command's word (read there, it names another cache than the one found here)."""
    from zluda_runner.commands import REMEMBERED_COMMANDS
    from zluda_runner.commands.global_options import leading_options
    from zluda_runner.core.places import COMMAND_MEMOS

    read = leading_options(args)
    if read is None:
        return None
    given, i = read
    if i >= len(args) or args[i] not in REMEMBERED_COMMANDS \
            or any(w.partition("=")[0] == "--cache-dir" for w in args[i + 1:]):
        return None
    return memos.memo_file(memos.cache_of(given, environ), COMMAND_MEMOS, args, environ)


def _view() -> list[object]:
    """What the view depends on besides the command line: whether stdout and stderr are terminals, the
    encoding and error rule of each, and the width a view fits each to."""
    from zluda_runner.core.termsize import view_width
    from zluda_runner.core.textio import raw

    found: list[object] = []
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            found.append(None)
            continue
        beneath = raw(stream)
        try:
            tty = stream.isatty()
        except (OSError, ValueError):
            tty = False
        found.append([tty, str(getattr(beneath, "encoding", None)), str(getattr(beneath, "errors", None)),
                      view_width(stream)])
    return found


def _identity(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, object]:
    return {**memos.identity(args, environ), "kind": "command", "view": _view()}


def _valid(memo: Mapping[str, object]) -> bool:
    """Every field a command's memo holds of its type."""
    said, code = memo.get("said"), memo.get("code")
    return (isinstance(code, int) and not isinstance(code, bool) and isinstance(said, list)
            and all(isinstance(c, list) and len(c) == 2 and c[0] in (0, 1) and isinstance(c[1], str)
                    for c in said))


def hit(args: Sequence[str], environ: Mapping[str, str]) -> dict[str, object] | None:
    """The memo of ``zluda-run ARGS`` in ``environ`` where every observation it holds is unchanged, else
    None."""
    path = memo_path(args, environ)
    if path is None:
        return None
    memo = memos.load(path, _identity(args, environ))
    return memo if memo is not None and _valid(memo) else None


def replay(args: Sequence[str]) -> None:
    """``zluda-run ARGS`` from its memo where nothing it observed changed: its text written, in order, on
    the streams beneath the CLI's (the same bytes), then this process exits with its code. Returns where
    there is no such memo."""
    memo = memos.found(hit, args)
    if memo is None:
        return
    from zluda_runner.core.textio import raw

    streams = [raw(sys.stdout), raw(sys.stderr)]
    for number, text in memo["said"]:  # type: ignore[attr-defined]
        streams[number].write(text)
        streams[number].flush()
    code: int = memo["code"]  # type: ignore[assignment]
    sys.exit(code)


def begin(args: Sequence[str]) -> Recorder | None:
    """The command line's memo replayed where it holds (this process exits); else, where ``args`` is a
    command line that is remembered, its derivation recorded from here; None otherwise."""
    if memo_path(args, os.environ) is None:
        return None
    replay(args)
    try:
        return Recorder(args)
    except OSError:  # (no current folder: nothing is remembered)
        return None


class Recorder:
    """The derivation of one printing command, recorded (:class:`zluda_runner.commands.memo.Recording`) with
    what it writes on the CLI's streams, until :meth:`remember` (it ended with an exit code) or
    :meth:`stop` (it ended another way: nothing is remembered)."""

    def __init__(self, args: Sequence[str]) -> None:
        from zluda_runner.core.textio import Sink

        self.args = list(args)
        self.identity = _identity(args, os.environ)
        self.said: list[list[object]] = []
        self.streams = [s for s in (sys.stdout, sys.stderr) if isinstance(s, Sink)]
        for number, stream in enumerate((sys.stdout, sys.stderr)):
            if isinstance(stream, Sink):
                stream.tee = (self.said, number)
        self.recording = memos.Recording(args)

    def stop(self) -> None:
        for stream in self.streams:
            stream.tee = None
        self.recording.stop()

    def remember(self, code: int) -> None:
        """The command ended with exit ``code``: its memo written where it can be made again (the streams
        it wrote are still the CLI's, and nothing tainted it); a read-only cache only costs speed."""
        try:
            self._write(code)
        except OSError:
            pass
        finally:
            self.stop()

    def _write(self, code: int) -> None:
        if [sys.stdout, sys.stderr] != self.streams:  # (a stream replaced while it ran, or not the CLI's:
            return  # what it said is not all here)
        seen = self.recording.observations()
        where = memo_path(self.args, os.environ)
        if seen is None or where is None or _identity(self.args, os.environ) != self.identity:
            return
        said: list[list[object]] = []
        for number, text in self.said:  # one chunk per run of writes to one stream
            if said and said[-1][0] == number:
                said[-1][1] = str(said[-1][1]) + str(text)
            else:
                said.append([number, text])
        for stream in self.streams:
            stream.flush()
        memos.save(where, {**self.identity, "observations": seen, "said": said, "code": code})
