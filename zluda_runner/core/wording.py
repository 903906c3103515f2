"""Hints worded for whoever reads them: one neutral text, rendered per front end.

A hint (or message) that tells the reader to set an option or to do something another call does says
so in a small markup, and each front end reads its own words:

- ``{opt:NAME}`` or ``{opt:NAME VALUE}``: an option. The command line reads ``--zluda-dir DIR``; a
  Python caller ``Options(zluda_dir=...)`` (a VALUE that is a placeholder such as ``DIR`` or
  ``<path>`` is the command line's alone; a real value such as ``6.2`` is shown to both).
- ``{cmd:WORDS}``: an action, given as the ``zluda-run`` command line that does it (``{cmd:doctor}``,
  ``{cmd:cache clean VERSION}``, ``{cmd:--verify-load -- CMD}``). The command line reads it quoted,
  `` `zluda-run cache clean VERSION` ``; a Python caller reads the API function,
  ``zluda_runner.clean_cache()``.
- ``{usage}``: how a launch's command is given.

Another program's command line (``pip install --force-reinstall``, ``sudo ldconfig``) is written as it
is: its flags are its own. The tables below are plain data (this is rank 0: the API's names are
spelled here, and tests/api/test_hint_wording.py checks each against ``zluda_runner.__all__``).
Whom the text is for is a context variable: :func:`worded_for` (the ``zluda-run`` front end sets
``"command line"`` around each command); the default is a Python caller.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Literal

Audience = Literal["python", "command line"]
AUDIENCES: tuple[Audience, ...] = ("python", "command line")

# option name -> (the command line's flag, what a Python caller sets, whether a real value is quoted there)
OPTIONS: dict[str, tuple[str, str, bool]] = {
    "zluda_dir": ("--zluda-dir", "Options(zluda_dir=...)", True),
    "release": ("--release", "Options(release=...)", True),
    "manifest": ("--manifest", "Options(manifest=...)", True),
    "cache_dir": ("--cache-dir", "Options(cache_dir=...)", True),
    "python": ("--python", "Options(python=...)", True),
    "force": ("--force", "Options(force=True)", False),
    "trust_on_first_use": ("--trust-on-first-use", "Options(trust_on_first_use=True)", False),
    "archive": ("--archive", "Options(archive=...)", True),
    "results_db": ("--results-db", "Options(results_db=...)", True),
    "no_record": ("--no-record", "Options(record=False)", False),
    "no_defaults": ("--no-defaults", "Options(defaults=False)", False),
    "monitor": ("--monitor", "Options(monitor=True)", False),
    "lock": ("--lock", "Options(lock=...)", True),
    # keywords of one call
    "torch_lib": ("--torch-lib", "torch_lib", True),
    "strict": ("--strict", "strict=True", False),
    "reinstall": ("--reinstall", "reinstall=True", False),
    "injector": ("--injector", "injector=True", False),
    "os": ("--os", "os=...", True),
    "hip": ("--hip", "hip=...", True),
    "cuda": ("--cuda", "cuda=...", False),
    "channel": ("--channel", "channel=...", True),
    "allow_http": ("--allow-http", "allow_http=True", False),
    "runs": ("--runs", "runs=...", False),
    "timeout": ("--timeout", "timeout=...", False),
    "a_cmd": ("--a-cmd", "a_command=...", True),
    "b_cmd": ("--b-cmd", "b_command=...", True),
    "b_python": ("--b-python", "b_python=...", True),
    "root": ("--root", "root=...", True),
    "libcuda": ("--libcuda", "libcuda=...", True),
    "dtypes": ("--dtypes", "dtypes=...", False),
    "quick": ("--quick", "quick=True", False),
    "since": ("--since", "since=...", True),
    "trace_out": ("--trace-out", "trace_launch(out=...)", True),
    "html": ("--html", "the HTML page", False),  # the command line's page: no call of the API writes one
    "candidate": ("--candidate", "candidates=...", True),
    "only_candidates": ("--only-candidates", "only_candidates=True", False),
}

# an action, as the command line's words -> the API function that does it
COMMANDS: dict[str, str] = {
    "releases": "list_releases",
    "fetch": "fetch",
    "inspect": "inspect",
    "plan": "plan_command",
    "plan --verify-load": "verify_plan",
    "run": "run",
    "place": "place",
    "restore": "restore",
    "status": "placement_status",
    "probe": "run_probe",
    "doctor": "run_doctor",
    "ab": "run_ab",
    "poc": "run_poc",
    "find": "find",
    "warmup": "warmup",
    "trace-report": "read_trace",
    "--trace": "trace_launch",
    "--verify-load": "verify_launch",
    "cache list": "list_cache",
    "cache path": "cache_path",
    "cache clean": "clean_cache",
    "cache compile": "compile_cache",
    "manifest update": "update_manifest",
    "results list": "list_results",
    "results show": "get_result",
    "results delete": "delete_result",
    "results diff": "diff_results",
    "results matrix": "results_matrix",
    "results export": "export_results",
    "results import": "import_results",
}

USAGE: dict[Audience, str] = {
    "command line": "usage: zluda-run [OPTIONS] -- COMMAND [ARGS]...",
    "python": "give the command as a sequence of words, its program first",
}

MARKUP = re.compile(r"\{(opt|cmd):([^{}]+)\}|\{usage\}")
_PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_.]*(?:/[A-Z][A-Z0-9_.]*)*|<[^<>]*>|X\.Y|N|\.\.\.")

_AUDIENCE: ContextVar[Audience] = ContextVar("zluda_runner_audience", default="python")


def audience() -> Audience:
    """Whom text is worded for now (:func:`worded_for`; a Python caller unless a front end said)."""
    return _AUDIENCE.get()


@contextlib.contextmanager
def worded_for(reader: Audience) -> Iterator[None]:
    """Word hints, messages and warnings for ``reader`` while the block runs."""
    token = _AUDIENCE.set(reader)
    try:
        yield
    finally:
        _AUDIENCE.reset(token)


def command_key(words: str) -> tuple[str, str]:
    """``(the action, the command line's rest)`` of ``{cmd:WORDS}``: the longest leading words that
    name an action (``cache clean 1.2`` -> ``("cache clean", "1.2")``). KeyError when none does."""
    parts = words.split()
    for n in (2, 1):
        key = " ".join(parts[:n])
        if len(parts) >= n and key in COMMANDS:
            return key, " ".join(parts[n:])
    raise KeyError(words)


def option_key(body: str) -> tuple[str, str]:
    """``(the option, its value)`` of ``{opt:NAME VALUE}``. KeyError for an unknown option."""
    name, _, value = body.strip().partition(" ")
    if name not in OPTIONS:
        raise KeyError(name)
    return name, value.strip()


def _option(body: str, reader: Audience) -> str:
    name, value = option_key(body)
    flag, call, quoted = OPTIONS[name]
    if reader == "command line":
        return f"{flag} {value}" if value else flag
    if value and "..." in call and not _PLACEHOLDER.fullmatch(value):
        return call.replace("...", f'"{value}"' if quoted else value)
    return call


def _command(words: str, reader: Audience) -> str:
    key, _rest = command_key(words)
    if reader == "command line":
        return f"`zluda-run {words.strip()}`"
    return f"zluda_runner.{COMMANDS[key]}()"


def render(text: str, reader: Audience | None = None) -> str:
    """``text`` with its markup worded for ``reader`` (default: :func:`audience`). Text without markup
    (or already rendered) comes back as it is; an unknown name is left as written."""
    who = reader or audience()

    def one(match: re.Match[str]) -> str:
        kind, body = match.group(1), match.group(2)
        try:
            if kind is None:
                return USAGE[who]
            return _option(body, who) if kind == "opt" else _command(body, who)
        except KeyError:
            return match.group(0)

    return MARKUP.sub(one, text) if "{" in text else text
