"""Prove with the loader's own log which file every planned binding took.

The command runs with ``LD_DEBUG=libs,files`` and ``LD_DEBUG_OUTPUT=<tmp>/ld``;
glibc writes one log per process (``ld.<pid>``), so forked workers are covered.
``libs`` shows each search (``find library=``, ``trying file=``); ``files``
adds ``file=NAME [ns];  generating link map``, which confirms which attempt was
mapped, and shows objects opened by path. An LD_AUDIT redirect (ours, or
ZLUDA's ``zluda_ld``) changes the name before any search, so no search is
logged for it: the object appears as ``file=/abs/path [ns];  generating link
map`` under the redirected path. Logs written with ``libs`` alone are handled
too: a search's last attempt counts when ``calling init:`` shows that file.

This parser is self-contained (``zluda_runner.ldso`` did not exist when it was
written); both read the same glibc format.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..serial import JsonMixin
from .process import run_process

LD_DEBUG_VALUE = "libs,files"
LOG_PREFIX = "ld"

_LINE = re.compile(r"^\s*(\d+):\t?(.*)$")
_FIND = re.compile(r"^find library=(.+?) \[(\d+)\]; searching$")
_TRYING = re.compile(r"^\s+trying file=(.+)$")
_SEARCH = re.compile(r"^\s+search (?:path|cache)=")
_MAPPED = re.compile(r"^file=(.+?) \[(\d+)\];\s+generating link map$")
_REQUESTED = re.compile(r"^file=(.+?) \[(\d+)\];\s+(?:needed by|dynamically loaded by) (.+?) \[(\d+)\]$")
_INIT = re.compile(r"^calling init: (.+)$")


@dataclass
class LoadEvent(JsonMixin):
    """One object the loader mapped: what was asked for, which file it took, the log lines saying so."""

    pid: int
    namespace: int
    request: str  # the name looked for ("libcublas.so.13"), or a path (dlopen by path, audit redirect)
    file: str  # the file mapped, as the loader wrote it
    how: str  # "search" | "path" | "init" (seen only in a ``calling init`` line)
    lines: list[str] = field(default_factory=list)


@dataclass
class LoaderLog(JsonMixin):
    """Everything parsed from one process's log."""

    pid: int
    events: list[LoadEvent] = field(default_factory=list)
    requests: dict[str, list[str]] = field(default_factory=dict)  # name -> "needed by"/"loaded by" lines


@dataclass
class BindingEvidence(JsonMixin):
    """For one planned binding: the file the loader actually took, and its own words."""

    name: str
    expected: Path
    actual: Path | None
    taken: bool
    loader_lines: list[str] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)  # processes in which the expected file was mapped


@dataclass
class VerifyResult(JsonMixin):
    exit_code: int
    bindings: list[BindingEvidence] = field(default_factory=list)

    @property
    def all_taken(self) -> bool:
        return all(b.taken for b in self.bindings)

    def not_taken(self) -> list[BindingEvidence]:
        return [b for b in self.bindings if not b.taken]


@dataclass
class _Search:
    name: str
    namespace: int
    lines: list[str] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)


def _brief(search: _Search) -> list[str]:
    """A search's lines without the failed attempts (hwcaps subfolders make dozens of them)."""
    attempts = [line for line in search.lines if "trying file=" in line]
    kept = [line for line in search.lines if "trying file=" not in line]
    if len(attempts) > 1:
        kept.append(f"({len(attempts) - 1} earlier attempts not shown)")
    return [*kept, *attempts[-1:]]


def parse_ld_debug_text(text: str, pid: int = 0) -> LoaderLog:
    """Parse one process's ``LD_DEBUG=libs[,files]`` output."""
    log = LoaderLog(pid=pid)
    current: _Search | None = None
    unconfirmed: list[LoadEvent] = []  # libs-only: a search's last attempt, waiting for ``calling init``
    saw_mapped_lines = False
    inits: list[tuple[str, str]] = []

    def close_search() -> None:
        nonlocal current
        if current is not None and current.tried and not saw_mapped_lines:
            unconfirmed.append(
                LoadEvent(pid, current.namespace, current.name, current.tried[-1], "search", _brief(current))
            )
        current = None

    for raw in text.splitlines():
        m = _LINE.match(raw)
        if not m:
            continue
        if not log.pid:
            log.pid = int(m.group(1))
        body = m.group(2)
        quoted = f"{m.group(1)}: {body.strip()}"
        if not body.strip():
            continue
        if found := _FIND.match(body):
            close_search()
            current = _Search(found.group(1), int(found.group(2)), [quoted])
        elif current is not None and (tried := _TRYING.match(body)):
            current.tried.append(tried.group(1))
            current.lines.append(quoted)
        elif current is not None and _SEARCH.match(body):
            current.lines.append(quoted)
        elif mapped := _MAPPED.match(body):
            saw_mapped_lines = True
            name, ns = mapped.group(1), int(mapped.group(2))
            if current is not None and current.name == name and current.tried:
                event = LoadEvent(log.pid, ns, name, current.tried[-1], "search", [*_brief(current), quoted])
            else:
                event = LoadEvent(log.pid, ns, name, name, "path" if "/" in name else "search", [quoted])
            log.events.append(event)
            current = None
        elif req := _REQUESTED.match(body):
            log.requests.setdefault(os.path.basename(req.group(1)), []).append(quoted)
        elif init := _INIT.match(body):
            close_search()
            inits.append((init.group(1).strip(), quoted))
        else:
            close_search()
    close_search()

    initialised = {path for path, _ in inits}
    for event in unconfirmed:
        if event.file in initialised:
            log.events.append(event)
    known = {e.file for e in log.events} | {e.request for e in log.events}
    for path, quoted in inits:
        if path and "/" in path and path not in known:
            log.events.append(LoadEvent(log.pid, 0, path, path, "init", [quoted]))
            known.add(path)
    return log


def read_ld_debug_logs(folder: Path, prefix: str = LOG_PREFIX) -> list[LoaderLog]:
    """Parse every ``<prefix>.<pid>`` file glibc wrote into ``folder``."""
    logs = []
    for path in sorted(Path(folder).glob(f"{prefix}.*")):
        suffix = path.name[len(prefix) + 1 :]
        pid = int(suffix) if suffix.isdigit() else 0
        logs.append(parse_ld_debug_text(path.read_text(errors="replace"), pid))
    return logs


def _real(path: str | Path) -> str:
    return os.path.realpath(path)


def evidence_for(logs: Iterable[LoaderLog], expected: Mapping[str, Path]) -> list[BindingEvidence]:
    """For each ``name -> expected file``: did the loader map that file, and nothing else for that name?"""
    logs = list(logs)
    result = []
    for name, want in expected.items():
        want_real = _real(want)
        lines: list[str] = []
        pids: list[int] = []
        wrong: list[str] = []
        for log in logs:
            lines.extend(log.requests.get(name, []))
            for event in log.events:
                by_name = os.path.basename(event.request) == name and "/" not in event.request
                is_expected = _real(event.file) == want_real
                redirected = "/" in event.request and os.path.basename(event.request) == name
                if not (by_name or is_expected or redirected):
                    continue
                lines.extend(event.lines)
                if is_expected:
                    if log.pid not in pids:
                        pids.append(log.pid)
                elif by_name:
                    wrong.append(event.file)
                # another file opened by path (a shim forwarding to the original) is quoted, not wrong
        taken = bool(pids) and not wrong
        actual: Path | None = Path(wrong[0]) if wrong else (Path(want_real) if pids else None)
        result.append(BindingEvidence(name, Path(want), actual, taken, _dedupe(lines), pids))
    return result


def _dedupe(lines: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(lines))


def verify_bindings(
    argv: Sequence[str],
    env: Mapping[str, str],
    expected: Mapping[str, Path],
    *,
    timeout: float | None = None,
    keep_logs: Path | None = None,
) -> VerifyResult:
    """Run ``argv`` (stdio inherited) with the loader logging, and report every expected binding.

    ``keep_logs``: copy the raw ``ld.<pid>`` logs into this folder as well.
    """
    log_dir = Path(tempfile.mkdtemp(prefix="zluda-runner-ld-"))
    try:
        run_env = dict(env)
        run_env["LD_DEBUG"] = LD_DEBUG_VALUE
        run_env["LD_DEBUG_OUTPUT"] = str(log_dir / LOG_PREFIX)
        exit_code = run_process(argv, run_env, timeout=timeout)
        logs = read_ld_debug_logs(log_dir)
        if keep_logs is not None:
            Path(keep_logs).mkdir(parents=True, exist_ok=True)
            for path in log_dir.iterdir():
                shutil.copy2(path, Path(keep_logs) / path.name)
        return VerifyResult(exit_code, evidence_for(logs, expected))
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
