"""Read glibc's ``LD_DEBUG`` output: which file the loader took for each name, in its own words.

glibc prefixes every debug line with the writing process's pid (``"%5d:\\t"``). A log
is split by that pid and each process is read on its own: a forked child inherits
the parent's ``LD_DEBUG_OUTPUT`` file, so one ``ld.<pid>`` file can hold several
processes, and their lines can interleave.

``libs`` shows each search (``find library=``, ``search path=``, ``trying file=``)
and ``calling init:`` for every object initialised. ``files`` adds
``file=NAME [ns];  generating link map``, which says which search was mapped and
shows objects opened by path; a name an LD_AUDIT ``la_objsearch`` redirected is
not searched at all, it appears there under the redirected path.

- With ``files`` lines, a search counts when its name is mapped (the last
  ``trying file=`` is the file taken), and a mapped path counts as loaded by path.
- Otherwise (``libs`` alone, or a search that found a file already loaded under
  another path: glibc matches it by device and inode and maps nothing), a
  search's last attempt counts when that file, symlinks resolved, is one the
  process mapped or initialised. A process that died before any init or mapping
  (a missing DT_NEEDED is fatal) keeps the attempts whose file exists.
- An initialised object seen in no other way counts as loaded by path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.serial import JsonMixin

#: ``LD_DEBUG_OUTPUT=<folder>/ld`` makes glibc write ``<folder>/ld.<pid>``
LOG_PREFIX = "ld"

_LINE = re.compile(r"^\s*(\d+):\t?(.*)$")
_FIND = re.compile(r"^find library=(.+?) \[(\d+)\]; searching$")
_TRYING = re.compile(r"^\s*trying file=(.+)$")
_SEARCH = re.compile(r"^\s+search (?:path|cache)=")
_MAPPED = re.compile(r"^file=(.+?) \[(\d+)\];\s+generating link map$")
_REQUESTED = re.compile(r"^file=(.+?) \[(\d+)\];\s+(?:needed by|dynamically loaded by) (.+?) \[(\d+)\]$")
_INIT = re.compile(r"^calling init: (.+)$")


@dataclass
class LoadEvent(JsonMixin):
    """One object the loader took: what was asked for, which file it took, the log lines saying so."""

    pid: int
    namespace: int
    request: str  # the name looked for ("libcublas.so.13"), or a path (dlopen by path, audit redirect)
    file: str  # the file taken, as the loader wrote it
    how: str  # "search" | "path" | "init" (seen only in a ``calling init`` line)
    lines: list[str] = field(default_factory=list)


@dataclass
class LoaderLog(JsonMixin):
    """Everything parsed for one process."""

    pid: int
    events: list[LoadEvent] = field(default_factory=list)
    requests: dict[str, list[str]] = field(default_factory=dict)  # name -> "needed by"/"loaded by" lines


@dataclass
class _Search:
    name: str
    namespace: int
    lines: list[str] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)

    def brief(self) -> list[str]:
        """The search's lines without the failed attempts (hwcaps subfolders make dozens of them)."""
        attempts = [line for line in self.lines if "trying file=" in line]
        kept = [line for line in self.lines if "trying file=" not in line]
        if len(attempts) > 1:
            kept.append(f"({len(attempts) - 1} earlier attempts not shown)")
        return [*kept, *attempts[-1:]]


def _real(path: str) -> str:
    return os.path.realpath(path)


class _ProcessReader:
    """The parse state of one process's lines."""

    def __init__(self, pid: int) -> None:
        self.log = LoaderLog(pid=pid)
        self.current: _Search | None = None
        self.unconfirmed: list[LoadEvent] = []  # an unmapped search's last attempt, confirmed in finish()
        self.saw_mapped = False
        self.inits: list[tuple[str, str]] = []

    def _close_search(self) -> None:
        cur = self.current
        if cur is not None and cur.tried:
            self.unconfirmed.append(
                LoadEvent(self.log.pid, cur.namespace, cur.name, cur.tried[-1], "search", cur.brief())
            )
        self.current = None

    def feed(self, body: str) -> None:
        if not body:
            return  # glibc frames most messages with empty lines; they end nothing
        pid = self.log.pid
        quoted = f"{pid}: {body.strip()}"
        if found := _FIND.match(body):
            self._close_search()
            self.current = _Search(found.group(1), int(found.group(2)), [quoted])
        elif self.current is not None and (tried := _TRYING.match(body)):
            self.current.tried.append(tried.group(1))
            self.current.lines.append(quoted)
        elif self.current is not None and _SEARCH.match(body):
            self.current.lines.append(quoted)
        elif mapped := _MAPPED.match(body):
            self.saw_mapped = True
            name, ns, cur = mapped.group(1), int(mapped.group(2)), self.current
            if cur is not None and cur.name == name and cur.tried:
                event = LoadEvent(pid, ns, name, cur.tried[-1], "search", [*cur.brief(), quoted])
            else:
                event = LoadEvent(pid, ns, name, name, "path" if "/" in name else "search", [quoted])
            self.log.events.append(event)
            self.current = None
        elif req := _REQUESTED.match(body):
            self.log.requests.setdefault(os.path.basename(req.group(1)), []).append(quoted)
        elif init := _INIT.match(body):
            self._close_search()
            self.inits.append((init.group(1).strip(), quoted))
        else:
            self._close_search()

    def finish(self) -> LoaderLog:
        self._close_search()
        log = self.log
        loaded = {_real(path) for path, _ in self.inits} | {_real(e.file) for e in log.events}
        died_before_init = not self.inits and not self.saw_mapped
        for event in self.unconfirmed:
            if _real(event.file) in loaded or (died_before_init and os.path.exists(event.file)):
                log.events.append(event)
        known = {_real(e.file) for e in log.events}
        for path, quoted in self.inits:
            # "<main program>" names no file; everything else the loader initialises is a path
            if "/" in path and _real(path) not in known:
                log.events.append(LoadEvent(log.pid, 0, path, path, "init", [quoted]))
                known.add(_real(path))
        return log


def parse_ld_debug(text: str, *, pid: int | None = None) -> list[LoaderLog]:
    """Parse ``LD_DEBUG=libs[,files]`` output: one LoaderLog per process, in order of first line.

    Lines without glibc's pid prefix (the program's own output on a shared stderr) are skipped;
    ``pid``: read that process only.
    """
    readers: dict[int, _ProcessReader] = {}
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if m is None:
            continue
        line_pid = int(m.group(1))
        if pid is not None and line_pid != pid:
            continue
        reader = readers.get(line_pid)
        if reader is None:
            reader = readers[line_pid] = _ProcessReader(line_pid)
        reader.feed(m.group(2).rstrip())
    return [reader.finish() for reader in readers.values()]


def read_ld_debug_logs(folder: Path, prefix: str = LOG_PREFIX) -> list[LoaderLog]:
    """Parse every ``<prefix>.<pid>`` file glibc wrote into ``folder``."""
    logs: list[LoaderLog] = []
    for path in sorted(Path(folder).glob(f"{prefix}.*")):
        logs.extend(parse_ld_debug(path.read_text(errors="replace")))
    return logs


def bound_files(logs: Iterable[LoaderLog]) -> dict[str, str]:
    """Searched name -> file taken (a later search of a name wins); then every object taken by
    path and not already bound by a search, keyed by its path."""
    logs = list(logs)
    out: dict[str, str] = {}
    for log in logs:
        for event in log.events:
            if event.how == "search":
                out[event.request] = event.file
    taken = {_real(path) for path in out.values()}
    for log in logs:
        for event in log.events:
            if event.how != "search" and _real(event.file) not in taken:
                out.setdefault(event.file, event.file)
    return out
