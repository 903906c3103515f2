"""The global options of ``zluda-run``, declared once, as data (:data:`GLOBAL_OPTIONS`): click's group
(:mod:`zluda_runner.commands.toplevel`) is generated from this table, and the fast recogniser of a plain
launch (:func:`recognise`) reads the same rows; :func:`invocation_values` turns what either parsed into
the API's :class:`~zluda_runner.api.options.Options` and what only the command line has.

No click here (nor anything a plain launch does not need): ``zluda-run python x.py`` with a warm plan
starts the workload without importing click (benchmarks/launch_overhead.py).
"""

from __future__ import annotations

import os

from zluda_runner.commands import COMMAND_TABLE
from zluda_runner.core.envnames import CACHE_ENV, MANIFEST_ENV

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from zluda_runner.api.options import Options


class GlobalOption:
    """One global option of ``zluda-run``.

    ``name``: its flag (``--zluda-dir``); ``dest``: the parameter it sets (the :class:`Options` field of
    that name, unless :func:`invocation_values` says otherwise); ``flag``: it takes no value; ``metavar``,
    ``envvar`` (read when the option is not given; empty is unset), ``help`` as click shows them; ``path``:
    its value is a path (``~`` expanded, empty unset); ``launch``: a plain launch means it only as the
    field of the options it runs with, so the fast recogniser takes it (anything else, such as
    ``--json`` or ``--trace``, sends the command line to click)."""

    __slots__ = ("dest", "envvar", "flag", "help", "launch", "metavar", "name", "path")

    def __init__(self, name: str, help: str, *, dest: str | None = None, flag: bool = False,
                 metavar: str | None = None, envvar: str | None = None, path: bool = False,
                 launch: bool = True) -> None:
        self.name, self.help, self.flag, self.metavar = name, help, flag, metavar
        self.dest = dest or name.lstrip("-").replace("-", "_")
        self.envvar, self.path, self.launch = envvar, path, launch

    def value(self, given: str | bool | None) -> object:
        """The option's value from the word given (None: not given, nor its variable)."""
        if self.flag:
            return bool(given)
        return as_path(given) if self.path and isinstance(given, str | None) else given


def as_path(value: str | None) -> Path | None:
    """A path option's value: ``~`` expanded; not given or empty, unset."""
    if not value:
        return None
    from pathlib import Path

    return Path(value).expanduser()


# The order is --help's.
GLOBAL_OPTIONS: tuple[GlobalOption, ...] = (
    GlobalOption("--zluda-dir", "Use an already unpacked or self-built ZLUDA instead of a manifest release "
                 "(env ZLUDA_RUNNER_ZLUDA_DIR).", metavar="DIR", envvar="ZLUDA_RUNNER_ZLUDA_DIR", path=True),
    GlobalOption("--release", "Pick this manifest release (id, version or tag).", metavar="VERSION"),
    GlobalOption("--manifest", f"Release manifest to use instead of the packaged one (env {MANIFEST_ENV}).",
                 metavar="PATH", envvar=MANIFEST_ENV, path=True),
    GlobalOption("--cache-dir", f"Cache folder for downloads and unpacked releases (env {CACHE_ENV}).",
                 metavar="DIR", envvar=CACHE_ENV, path=True),
    GlobalOption("--json", "Print data as JSON (schema-versioned).", dest="as_json", flag=True, launch=False),
    GlobalOption("--python", "The target interpreter (default: the one the command runs).", metavar="PY"),
    GlobalOption("--force", "Go on even when a plan verdict is fatal.", flag=True),
    GlobalOption("--trace", "Trace every CUDA driver call the workload makes.", flag=True, launch=False),
    GlobalOption("--trace-out", "Where to write the trace report.", metavar="FILE", path=True, launch=False),
    GlobalOption("--verify-load", "Prove with the loader's own log which files bound.", flag=True,
                 launch=False),
    GlobalOption("--trust-on-first-use", "Accept a release asset whose SHA-256 is not published; the hash "
                 "seen is recorded.", flag=True),
    GlobalOption("--archive", "Install this hand-downloaded release archive instead of downloading "
                 "(verified).", metavar="FILE", path=True),
    GlobalOption("--lock", "Run the release, mechanism and settings a `find` locked in FILE (zluda.lock); "
                 "nothing chosen again (excludes --zluda-dir).", metavar="FILE", path=True),
    GlobalOption("--no-record", "Do not keep this run's results in the results store.", flag=True),
    GlobalOption("--no-defaults", "Apply none of the settings a ZLUDA launch needs (the plan lists them, "
                 "with reasons).", flag=True),
    GlobalOption("--monitor", "Sample the GPU while the workload runs; print utilisation, VRAM and power at "
                 "exit.", flag=True, launch=False),
    GlobalOption("--results-db", "Results store: postgresql://... or a SQLite file (default: results.db in "
                 "the cache folder).", metavar="URL", envvar="ZLUDA_RUNNER_RESULTS_DB"),
)
# what only the command line has (the rest are Options fields; --no-X is the field X switched off)
COMMAND_LINE_ONLY = ("as_json", "trace", "trace_out", "verify_load")
SWITCHED_OFF = {"no_record": "record", "no_defaults": "defaults"}


def invocation_values(given: Mapping[str, object]) -> tuple[Options, dict[str, object]]:
    """The API's options from the global options' values (by ``dest``), and the values only the command
    line has (``--json``, ``--trace``, ``--trace-out``, ``--verify-load``)."""
    from zluda_runner.api.options import Options

    fields = {SWITCHED_OFF.get(k, k): (not v if k in SWITCHED_OFF else v) for k, v in given.items()
              if k not in COMMAND_LINE_ONLY}
    return Options(**fields), {k: given[k] for k in COMMAND_LINE_ONLY if k in given}  # type: ignore[arg-type]


def is_program(word: str) -> bool:
    """Is the first word a program (a path, or a name on PATH) rather than perhaps a misspelt command?"""
    from zluda_runner.core.observe import which

    return os.sep in word or bool(which(word))


def recognise(args: Sequence[str], environ: Mapping[str, str]) -> tuple[dict[str, object], list[str]] | None:
    """A plain launch (``zluda-run [OPTIONS] -- CMD ...`` or ``zluda-run [OPTIONS] PROGRAM ...`` whose
    options are all :attr:`GlobalOption.launch` ones, each given whole): the value of every global option
    (by ``dest``: from its words, else its environment variable, as click reads them) and the workload's
    words. None for anything else -- a command word, any other option (``--json``, ``--help``, one
    misspelt or run's own ``--strict``), an option without its value (or one that starts with ``-``), a
    first word that is no program
    (a misspelt command?), no workload -- which click's group then parses, with its errors and
    suggestions."""
    found = recognise_words(args)
    if found is None:
        return None
    given, command = found
    values = {o.dest: o.value(given[o.dest] if o.dest in given else _from_env(o, environ))
              for o in GLOBAL_OPTIONS}
    return values, command


def recognise_words(args: Sequence[str]) -> tuple[dict[str, str | bool], list[str]] | None:
    """:func:`recognise`'s reading of the words alone: the words given for each option (by ``dest``; a switch
    True) and the workload's words, or None for what is no plain launch."""
    read = leading_options(args, launch=True)
    if read is None:
        return None
    given, i = read
    if i >= len(args):
        return None
    if args[i] == "--":
        command = list(args[i + 1:])
    elif args[i] in COMMAND_TABLE or not is_program(args[i]):
        return None
    else:
        command = list(args[i:])
    if not command:
        return None
    return given, command


def leading_options(args: Sequence[str], *, launch: bool = False) -> tuple[dict[str, str | bool], int] | None:
    """The global options ``args`` start with, each given whole (by ``dest``: its word, a switch True), and
    the index of the first word that is none (a command, a program, ``--``; ``len(args)``: none); None
    where one is not a global option (or, ``launch``, not a plain launch's), or has no value of its own."""
    options = {o.name: o for o in GLOBAL_OPTIONS}
    given: dict[str, str | bool] = {}
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--" or not word.startswith("-"):
            return given, i
        name, equals, value = word.partition("=")
        option = options.get(name)
        if option is None or (launch and not option.launch) or (option.flag and equals):
            return None
        if not option.flag and not equals:
            if i + 1 >= len(args) or args[i + 1].startswith("-"):  # no value, or one click reads its way
                return None
            i += 1
            value = args[i]
        given[option.dest] = True if option.flag else value
        i += 1
    return given, i


def given_text(dest: str, given: Mapping[str, str | bool], environ: Mapping[str, str]) -> str | None:
    """The text an option was given (by ``dest``: its word, else its variable), as :func:`recognise` reads it
    before making it a value; None when not given."""
    word = given.get(dest)
    if isinstance(word, str):
        return word
    option = next(o for o in GLOBAL_OPTIONS if o.dest == dest)
    return _from_env(option, environ)


def _from_env(option: GlobalOption, environ: Mapping[str, str]) -> str | None:
    return (environ.get(option.envvar) or None) if option.envvar else None


def global_words(values: Mapping[str, object]) -> list[str]:
    """The global options set, as the words a run records (:func:`zluda_runner.commands.common.command_line`
    says how): each by its flag, with its value unless a switch; in the table's order."""
    words: list[str] = []
    for option in GLOBAL_OPTIONS:
        value = values.get(option.dest)
        if value is None or value is False:
            continue
        words += [option.name] if option.flag else [option.name, str(value)]
    return words


def argument_words(given: Sequence[object]) -> list[str]:
    """A workload's words as a run records them: after ``--``."""
    words = [str(v) for v in given]
    return ["--", *words[1:]] if words[:1] == ["--"] else ["--", *words]
