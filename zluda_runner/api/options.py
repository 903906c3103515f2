"""The one options record of the public API, and the one place it becomes the library's settings.

Also where an error leaving the API is worded for a Python caller: the library's hints name the
command line's flags and commands (``--zluda-dir DIR``, `` `zluda-run doctor` ``); at this boundary
they name :class:`Options` fields and API functions instead. Same exception, same type.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.settings import Settings


@dataclass(frozen=True)
class Options:
    """Everything a caller may set, once, for every call of the API (all keywords, all optional).

    Attributes:
        cache_dir: where releases, plans and the results store live (default: ``$ZLUDA_RUNNER_CACHE``,
            else the platform's user cache folder).
        zluda_dir: a ZLUDA folder to use as is (one you unpacked or built) instead of a release from
            the manifest.
        release: the manifest release to use (id, version or tag) instead of the one selected.
        manifest: a release manifest file to read instead of the packaged (or updated) one.
        python: the interpreter whose torch is the target (default: the one the command runs,
            else this one).
        trust_on_first_use: accept, and record, a release whose SHA-256 the manifest does not know.
        archive: a hand-downloaded release archive to install instead of downloading it.
        force: go on when the plan predicts the launch will fail (a fatal verdict).
        results_db: the results store: a SQLite file or a ``postgresql://`` URL (default: ``results.db``
            in the cache folder).
        record: keep probe and doctor results in the results store.
        defaults: apply the settings a ZLUDA launch needs (fused attention off where the release cannot
            run it, cuDNN off without a stand-in, ...), each listed with its reason in the plan.
        monitor: sample the GPU (utilisation, VRAM, power) while a workload runs.
    """

    cache_dir: Path | None = None
    zluda_dir: Path | None = None
    release: str | None = None
    manifest: Path | None = None
    python: str | None = None
    trust_on_first_use: bool = False
    archive: Path | None = None
    force: bool = False
    results_db: str | None = None
    record: bool = True
    defaults: bool = True
    monitor: bool = False


def to_settings(options: Options | None, *, verify_load: bool = False,
                trace_out: Path | None = None) -> Settings:
    """The library's settings for ``options`` (the only conversion: the CLI builds :class:`Options`
    too). ``verify_load`` and ``trace_out`` are what one call asks for, not options of every call."""
    o = options or Options()
    return Settings(
        zluda_dir=_path(o.zluda_dir), release=o.release, manifest=_path(o.manifest), python=o.python,
        force=o.force, trust_on_first_use=o.trust_on_first_use, archive=_path(o.archive),
        record=o.record, results_db=o.results_db, defaults=o.defaults, monitor=o.monitor,
        verify_load=verify_load, trace_out=trace_out,
        **({} if o.cache_dir is None else {"cache_dir": Path(o.cache_dir)}),
    )


def keep(kind: str, report: object, settings: Settings, command: Sequence[str], *,
         on_warning: Callable[[str], None] | None = None, release: Mapping[str, object] | None = None,
         target: Mapping[str, object] | None = None) -> None:
    """Record ``report`` in the results store unless ``Options(record=False)``; a store problem goes to
    ``on_warning`` (worded for the audience), never raises."""
    from zluda_runner.results.recording import record_for

    warning = record_for(kind, report, settings, list(command), release=None if release is None else
                         dict(release), target=None if target is None else dict(target))
    if warning and on_warning is not None:
        on_warning(worded(warning))


def _path(value: Path | str | None) -> Path | None:
    return None if value is None else Path(value)


# --------------------------------------------------------------------------- wording for the caller

# A command line flag -> what a caller of the API sets instead.
_FLAGS = {
    "--zluda-dir": "Options(zluda_dir=...)",
    "--release": "Options(release=...)",
    "--manifest": "Options(manifest=...)",
    "--cache-dir": "Options(cache_dir=...)",
    "--python": "Options(python=...)",
    "--force": "Options(force=True)",
    "--trust-on-first-use": "Options(trust_on_first_use=True)",
    "--archive": "Options(archive=...)",
    "--results-db": "Options(results_db=...)",
    "--no-record": "Options(record=False)",
    "--no-defaults": "Options(defaults=False)",
    "--monitor": "Options(monitor=True)",
    "--torch-lib": "torch_lib",
    "--strict": "strict=True",
    "--reinstall": "reinstall=True",
}
# The first word(s) of a suggested command -> the API function that does it.
_COMMANDS = {
    "releases": "zluda_runner.choose_release()",
    "fetch": "zluda_runner.fetch()",
    "inspect": "zluda_runner.inspect()",
    "plan": "zluda_runner.plan_command()",
    "run": "zluda_runner.run()",
    "place": "zluda_runner.place()",
    "restore": "zluda_runner.restore()",
    "status": "zluda_runner.placement_status()",
    "probe": "zluda_runner.run_probe()",
    "doctor": "zluda_runner.run_doctor()",
    "results": "zluda_runner.list_results()",
    "ab": "zluda_runner.run_ab()",
    "warmup": "zluda_runner.warmup()",
    "trace-report": "zluda_runner.read_trace()",
    "cache": "zluda_runner.list_cache()",
    "manifest": "zluda_runner.update_manifest()",
}
# A command and its subcommand -> the API function that does it.
_SUBCOMMANDS = {
    ("cache", "list"): "zluda_runner.list_cache()",
    ("cache", "path"): "zluda_runner.cache_path()",
    ("cache", "clean"): "zluda_runner.clean_cache()",
    ("cache", "compile"): "zluda_runner.compile_cache()",
    ("manifest", "update"): "zluda_runner.update_manifest()",
    ("results", "list"): "zluda_runner.list_results()",
    ("results", "show"): "zluda_runner.get_result()",
    ("results", "delete"): "zluda_runner.delete_result()",
    ("results", "diff"): "zluda_runner.diff_results()",
    ("results", "matrix"): "zluda_runner.results_matrix()",
    ("results", "export"): "zluda_runner.export_results()",
    ("results", "import"): "zluda_runner.import_results()",
}
# A launch flag that makes the launch another call.
_LAUNCH_FLAGS = {"--trace": "zluda_runner.trace_launch()", "--verify-load": "zluda_runner.verify_launch()"}
# a usage line
_USAGE = re.compile(r"usage: zluda-run \[[^\]]*\] -- \S+ \[[^\]]*\]\.*")
# an unquoted command line: zluda-run, then its words up to a comma, semicolon, bracket or the end
_BARE_COMMAND = re.compile(r"\bzluda-run((?: [^\s,;()`]+)+)")
# another program's command line (its flags are its own): kept as it is, in backquotes
_OTHER_COMMAND = re.compile(r"\b(?:pip|python -m pip|uv pip) install[^,;()`]*")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*(?:[ =](?:[A-Z][A-Z_]*|[A-Z]\b|X\.Y|N))?")


def _api_call(words: list[str]) -> str | None:
    """The API function for a command line's words (``cache clean`` -> ``clean_cache()``; ``--trace``
    -> ``trace_launch()``), or None when the words name no command of the API."""
    launch = next((_LAUNCH_FLAGS[w] for w in words if w in _LAUNCH_FLAGS), None)
    if launch is not None:
        return launch
    named = [w for w in words if not w.startswith("-")]
    if len(named) > 1 and (named[0], named[1]) in _SUBCOMMANDS:
        return _SUBCOMMANDS[(named[0], named[1])]
    return _COMMANDS.get(named[0]) if named else None


def _quoted(span: str) -> str:
    return _api_call(span.strip("`").split()[1:]) or span


def _bare(match: re.Match[str]) -> str:
    words = match.group(1).split()
    if words[0] not in _COMMANDS and not words[0].startswith("-"):
        return match.group(0)  # "zluda-run goes on": the program named in a sentence
    return _api_call(words) or f"`{match.group(0)}`"


def _flag_words(match: re.Match[str]) -> str:
    flag = re.split(r"[ =]", match.group(0), maxsplit=1)[0]
    return _FLAGS.get(flag, f"the {flag[2:].replace('-', '_')} option")


def for_caller(text: str) -> str:
    """``text`` with the command line's commands and flags named as the API's functions and options.

    Every command has its call (``zluda-run ab`` -> ``run_ab()``, ``--trace`` -> ``trace_launch()``); a
    command line the API has no call for stays, in backquotes, as the command line to use; flags outside
    it become :class:`Options` fields or keywords."""
    text = _USAGE.sub("give the command as a sequence of words, its program first", text)
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for part in parts:
        if part.startswith("`--") and part.endswith("`"):  # `--archive FILE`: an option, quoted
            out.append(_FLAG.sub(_flag_words, part.strip("`")))
            continue
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(_quoted(part) if part.startswith("`zluda-run") else part)
            continue
        part = _OTHER_COMMAND.sub(lambda m: f"`{m.group(0).rstrip()}`", part)
        part = _BARE_COMMAND.sub(_bare, part)
        out.extend(piece if piece.startswith("`") else _FLAG.sub(_flag_words, piece)
                   for piece in re.split(r"(`[^`]*`)", part))
    return "".join(out)


Audience = Literal["python", "command line"]
_AUDIENCE: ContextVar[Audience] = ContextVar("zluda_runner_api_audience", default="python")


@contextlib.contextmanager
def worded_for(audience: Audience) -> Iterator[None]:
    """Whom the API's errors and warnings are worded for while the block runs: a Python caller (the
    default: :class:`Options` fields, API functions) or ``"command line"`` (the ``zluda-run`` front end,
    which calls this API: its hints keep naming its flags and commands)."""
    token = _AUDIENCE.set(audience)
    try:
        yield
    finally:
        _AUDIENCE.reset(token)


def worded(text: str) -> str:
    """``text`` (a hint, a warning) worded for the audience of the current call (:func:`worded_for`)."""
    return text if _AUDIENCE.get() == "command line" else for_caller(text)


def warn_with(on_warning: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """``on_warning`` hearing each warning worded for the audience (None stays None)."""
    if on_warning is None:
        return None
    hear = on_warning
    return lambda text: hear(worded(text))


@contextlib.contextmanager
def caller_errors() -> Iterator[None]:
    """Re-raise a :class:`ZludaRunnerError` from the library with its hint (and message) worded for
    a caller of the API: the same exception object, so its type and ``exit_code`` are kept. (For
    the command line, :func:`worded_for`, the library's own words are kept.)"""
    try:
        yield
    except ZludaRunnerError as exc:
        if _AUDIENCE.get() == "command line":
            raise
        exc.message = for_caller(exc.message)
        if exc.hint:
            exc.hint = for_caller(exc.hint)
        exc.args = (exc.message, *exc.args[1:])
        raise
