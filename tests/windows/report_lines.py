"""What the Windows fixture programs print, read back as records.

The programs under ``tests/fixtures/windows/`` print one fact a line: the stand-ins
(``standin.c``, ``hip_sdk.c``) ``[standin TAG] FUNCTION[ DETAIL] (module PATH)`` for each call,
the clients (``cudart_client.c``, ``cuda_program.c``, ``torchlike.c``)
``cudaGetDeviceCount -> RC (count N)``, ``cublasCreate_v2 -> RC``, ``nvcuda.dll in process: PATH``
and ``module NAME = PATH`` (``none`` where nothing is loaded). Tests assert on these fields, not on
the lines' wording; a line none of them prints (a workload's own) is kept, in order, in ``other``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_CALL = re.compile(r"^\[(standin|hip-sdk) ([^\]]+)\] (\S+)(?: (.*?))? \(module (.*)\)$")
_COUNT = re.compile(r"^cudaGetDeviceCount -> (-?\d+) \(count (-?\d+)\)$")
_BLAS = re.compile(r"^cublasCreate_v2 -> (-?\d+)$")
_IN_PROCESS = re.compile(r"^nvcuda\.dll in process: (.*)$")
_MODULE = re.compile(r"^module (\S+) = (.*)$")


@dataclass(frozen=True)
class Call:
    """One call a stand-in answered: who (``source`` ``standin`` or ``hip-sdk``, its ``tag``), what
    (``function``, ``detail``: the symbol a ``cuGetProcAddress`` asked for) and the module's own path."""

    source: str
    tag: str
    function: str
    detail: str
    module: str


@dataclass(frozen=True)
class ProgramReport:
    calls: tuple[Call, ...]
    device_count: tuple[int, ...]  # cudaGetDeviceCount's return codes, in order
    blas_create: tuple[int, ...]  # cublasCreate_v2's return codes
    in_process: tuple[str | None, ...]  # each "nvcuda.dll in process" line: the path, None for none
    modules: dict[str, str | None]  # torchlike.exe's module list: name -> path, None for none
    other: tuple[str, ...]  # every other line, in order

    def tags(self) -> set[str]:
        return {c.tag for c in self.calls}

    def sources(self) -> set[str]:
        """The first word of each stand-in's tag: who built it (``zluda``, ``nvidia``)."""
        return {c.tag.split()[0] for c in self.calls}

    def modules_of(self, tag: str, function: str | None = None) -> set[str]:
        """The module paths that answered ``tag``'s calls (of ``function`` only, when given)."""
        return {c.module for c in self.calls if c.tag == tag and function in (None, c.function)}

    def functions(self, tag: str) -> list[str]:
        return [c.function for c in self.calls if c.tag == tag]


def read_report(stdout: str) -> ProgramReport:
    calls: list[Call] = []
    counts: list[int] = []
    blas: list[int] = []
    in_process: list[str | None] = []
    modules: dict[str, str | None] = {}
    other: list[str] = []
    for line in stdout.replace("\r\n", "\n").splitlines():
        if m := _CALL.match(line):
            calls.append(Call(m[1], m[2], m[3], m[4] or "", m[5]))
        elif m := _COUNT.match(line):
            counts.append(int(m[1]))
        elif m := _BLAS.match(line):
            blas.append(int(m[1]))
        elif m := _IN_PROCESS.match(line):
            in_process.append(None if m[1] == "none" else m[1])
        elif m := _MODULE.match(line):
            modules[m[1]] = None if m[2] == "none" else m[2]
        else:
            other.append(line)
    return ProgramReport(tuple(calls), tuple(counts), tuple(blas), tuple(in_process), modules, tuple(other))


def trailing_json(stdout: str) -> tuple[list[str], dict[str, Any]]:
    """A ``--json`` run's stdout: the workload's own lines before zluda-run's JSON object (the last
    line that is ``{``), and that object."""
    lines = stdout.replace("\r\n", "\n").splitlines()
    start = max((i for i, line in enumerate(lines) if line == "{"), default=None)
    assert start is not None, f"no JSON object on stdout:\n{stdout}"
    data: dict[str, Any] = json.loads("\n".join(lines[start:]))
    return lines[:start], data


def read_verified(stdout: str) -> tuple[ProgramReport, dict[str, Any]]:
    """``zluda-run --json --verify-load run``'s stdout: the workload's own lines as a report, and the
    verification (``verify_load``: the run's exit code, each binding's state and the file taken)."""
    lines, data = trailing_json(stdout)
    verified: dict[str, Any] = data["verify_load"]
    return read_report("\n".join(lines)), verified


def bindings(verified: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """Each planned binding of a verification: name -> (state, the file the process took)."""
    return {b["name"]: (b["state"], b["actual"]) for b in verified["bindings"]}
