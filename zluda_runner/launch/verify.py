"""Prove with the loader's own log which file every planned binding took.

The command runs with ``LD_DEBUG=libs,files`` and ``LD_DEBUG_OUTPUT=<tmp>/ld``;
glibc writes one log per program started (``ld.<pid>``); a forked worker writes
into its parent's file under its own pid, and is read as its own process.
``libs`` shows each search (``find library=``, ``trying file=``); ``files``
adds ``file=NAME [ns];  generating link map``, which confirms which attempt was
mapped, and shows objects opened by path. An LD_AUDIT redirect (ours, or
ZLUDA's ``zluda_ld``) changes the name before any search, so no search is
logged for it: the object appears as ``file=/abs/path [ns];  generating link
map`` under the redirected path. Logs written with ``libs`` alone are handled
too: a search's last attempt counts when ``calling init:`` shows that file.

The logs are read by ``zluda_runner.loader.ldlog`` (the parser ``zluda_runner.loader.glibc``
uses too); this module turns them into evidence per planned binding.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.core.serial import JsonMixin
from zluda_runner.launch.process import run_process
from zluda_runner.loader.ldlog import LOG_PREFIX, LoaderLog, read_ld_debug_logs

LD_DEBUG_VALUE = "libs,files"


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
