"""The ``zluda-run`` command: a thin click layer over the public API (:mod:`zluda_runner.api`).

``zluda-run python infer.py`` is ``zluda-run run -- python infer.py``: any first
word that is not one of our commands (or anything after ``--``) is the workload.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from zluda_runner.commands import COMMAND_TABLE, load_command
from zluda_runner.core import exitcodes
from zluda_runner.core.envnames import CACHE_ENV, MANIFEST_ENV
from zluda_runner.core.textio import make_standard_streams_safe
from zluda_runner.core.version import JSON_SCHEMA_VERSION, __version__

if TYPE_CHECKING:  # `zluda-run --help` imports neither the errors nor pathlib, json or shutil
    from pathlib import Path

    from zluda_runner.core.errors import ZludaRunnerError

RUN_COMMAND = "run"
# Commands that need the x86-64 machine ZLUDA runs on (everything else works anywhere).
X86_COMMANDS = frozenset({"run", "probe", "warmup", "ab"})
_SUGGEST_CUTOFF = 0.75
# Options of a command that may also come first, like the group's own: `zluda-run --strict python x.py`.
COMMAND_FIRST = frozenset({"--strict"})


class FallthroughGroup(click.Group):
    """A group whose unknown first word (or ``--``) means: run this command.

    Before ``--`` (or before a run's workload), options are options: a global option
    given after the command name (``zluda-run plan --zluda-dir R -- python ...``) is
    moved in front of it, unless the command has an option of that name itself; an
    unknown option is click's usage error with its "did you mean". A first word that is
    close to a command name and is no program on PATH is a usage error with a suggestion.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["zluda_json"] = _wants_json(args)
        return super().parse_args(ctx, self._normalise(ctx, list(args)))

    def _normalise(self, ctx: click.Context, args: list[str]) -> list[str]:
        i = self._skip_own_options(ctx, args, 0)
        own = [a for a in args[:i] if a in COMMAND_FIRST]  # handed to the command (run's, doctor's)
        args, i = [*(a for a in args[:i] if a not in COMMAND_FIRST), *args[i:]], i - len(own)
        if i >= len(args):
            return [*args, *own]
        word = args[i]
        ctx.meta["zluda_command"] = RUN_COMMAND if word == "--" else word
        if word == "--":
            return [*args[:i], RUN_COMMAND, *own, "--", *args[i + 1 :]]
        if word not in self.commands and word not in COMMAND_TABLE:
            self._refuse_typo(ctx, word)
            ctx.meta["zluda_command"] = RUN_COMMAND
            return [*args[:i], RUN_COMMAND, *own, "--", *args[i:]]
        command = self.get_command(ctx, word)
        if command is None:  # pragma: no cover - COMMAND_TABLE names only real commands
            return args
        hoisted, rest = self._hoist_globals(ctx, command, args[i + 1 :])
        return [*args[:i], *hoisted, word, *own, *rest]

    def _skip_own_options(self, ctx: click.Context, args: list[str], i: int) -> int:
        while i < len(args) and args[i].startswith("-") and args[i] != "--":
            opt = self._option_for(ctx, args[i])
            i += 2 if opt is not None and not opt.is_flag and "=" not in args[i] else 1
        return i

    def _refuse_option(self, ctx: click.Context, command: click.Command, arg: str) -> None:
        """An option neither the command nor the group knows: click's error, suggesting from both."""
        import difflib
        names = [n for p in (*command.params, *self.get_params(ctx)) if isinstance(p, click.Option)
                 for n in (*p.opts, *p.secondary_opts) if n.startswith("--")]
        close = difflib.get_close_matches(arg.split("=", 1)[0], names, n=3, cutoff=0.6)
        raise click.NoSuchOption(arg.split("=", 1)[0], possibilities=close, ctx=ctx)

    def _refuse_typo(self, ctx: click.Context, word: str) -> None:
        import shutil

        if os.sep in word or shutil.which(word):
            return
        import difflib  # only on this path: a cached launch must start fast
        close = difflib.get_close_matches(word, self.list_commands(ctx), n=1, cutoff=_SUGGEST_CUTOFF)
        if close:
            raise click.UsageError(
                f"No such command or program {word!r}. Did you mean {close[0]!r}?", ctx
            )

    def _hoist_globals(
        self, ctx: click.Context, command: click.Command, tail: list[str]
    ) -> tuple[list[str], list[str]]:
        """Split the words after the command name into group options and the command's own words."""
        # a workload command's options end at its first word; a group's subcommand words are skipped
        passthrough = not command.allow_interspersed_args and not isinstance(command, click.Group)
        hoisted: list[str] = []
        rest: list[str] = []
        i = 0
        while i < len(tail):
            arg = tail[i]
            if arg == "--" or (passthrough and not arg.startswith("-")):
                rest.extend(tail[i:])
                break
            own = _option_named(command.params, arg)
            group_opt = None if own is not None else self._option_for(ctx, arg)
            unknown = own is None and group_opt is None and arg.startswith("--")
            if unknown and not isinstance(command, click.Group):
                self._refuse_option(ctx, command, arg)
            if group_opt is not None and not group_opt.expose_value:
                group_opt = None  # --help / --version after a command are the command's
            opt = own or group_opt
            out = hoisted if group_opt is not None else rest
            out.append(arg)
            if opt is not None and not opt.is_flag and "=" not in arg and i + 1 < len(tail):
                i += 1
                out.append(tail[i])
            i += 1
        return hoisted, rest

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        # Commands are imported on first use (a cached `zluda-run CMD` must start fast).
        if cmd_name not in self.commands:
            command = load_command(cmd_name)
            if command is not None:
                self.add_command(command)
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_TABLE)  # get_command adds only the table's commands

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's listing from the command table (`zluda-run --help` imports no command): a command of
        # the table's help line is shortened to the width exactly as the real one
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = [(n, click.Command(n, help=COMMAND_TABLE[n][1]).get_short_help_str(limit)) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _option_for(self, ctx: click.Context, arg: str) -> click.Option | None:
        return _option_named(self.get_params(ctx), arg)

    def invoke(self, ctx: click.Context) -> Any:
        # what running a command needs is imported here: `zluda-run --help` starts without it
        from zluda_runner.api.options import worded_for
        from zluda_runner.core.arch import require_x86_64
        from zluda_runner.core.errors import ZludaRunnerError

        if ctx.meta.get("zluda_command") in X86_COMMANDS:
            require_x86_64()
        try:
            with worded_for("command line"):  # the API's hints keep naming this front end's flags
                return super().invoke(ctx)
        except ZludaRunnerError as exc:
            report_error(exc, as_json=bool(ctx.meta.get("zluda_json")))
            ctx.exit(exc.exit_code)


def _option_named(params: list[click.Parameter], arg: str) -> click.Option | None:
    """The option among ``params`` that ``arg`` (``--name`` or ``--name=value``) names."""
    name = arg.split("=", 1)[0]
    for param in params:
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


def report_error(exc: ZludaRunnerError, *, as_json: bool = False) -> None:
    """``error:``/``hint:`` lines on stderr; with ``--json`` a JSON object on stdout (both worded for
    the command line: its flags and commands)."""
    message, hint = exc.message_for("command line"), exc.hint_for("command line")
    if as_json:
        import json

        payload = {"schema": JSON_SCHEMA_VERSION, "error": message, "hint": hint, "exit_code": exc.exit_code,
                   "kind": exc.kind, **({"details": dict(getattr(exc, "details", {}))}
                                        if getattr(exc, "details", None) else {})}
        click.echo(json.dumps(payload, indent=2))
        return
    from zluda_runner.report.terminal import say

    say([f"error: {message}", *([f"hint: {hint}"] if hint else [])], err=True)


def _path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    if not value:
        return None
    from pathlib import Path

    return Path(value).expanduser()


@click.group(
    cls=FallthroughGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=False,
)
@click.version_option(__version__, prog_name="zluda-run")
@click.option(
    "--zluda-dir",
    metavar="DIR",
    envvar="ZLUDA_RUNNER_ZLUDA_DIR",
    callback=_path,
    help="Use an already unpacked or self-built ZLUDA instead of a manifest release "
    "(env ZLUDA_RUNNER_ZLUDA_DIR).",
)
@click.option("--release", metavar="VERSION", help="Pick this manifest release (id, version or tag).")
@click.option(
    "--manifest",
    metavar="PATH",
    envvar=MANIFEST_ENV,
    callback=_path,
    help=f"Release manifest to use instead of the packaged one (env {MANIFEST_ENV}).",
)
@click.option(
    "--cache-dir",
    metavar="DIR",
    envvar=CACHE_ENV,
    callback=_path,
    help=f"Cache folder for downloads and unpacked releases (env {CACHE_ENV}).",
)
@click.option("--json", "as_json", is_flag=True, help="Print data as JSON (schema-versioned).")
@click.option("--python", metavar="PY", help="The target interpreter (default: the one the command runs).")
@click.option("--force", is_flag=True, help="Go on even when a plan verdict is fatal.")
@click.option("--trace", is_flag=True, help="Trace every CUDA driver call the workload makes.")
@click.option("--trace-out", metavar="FILE", callback=_path, help="Where to write the trace report.")
@click.option("--verify-load", is_flag=True, help="Prove with the loader's own log which files bound.")
@click.option("--trust-on-first-use", is_flag=True,
              help="Accept a release asset whose SHA-256 is not published; the hash seen is recorded.")
@click.option("--archive", metavar="FILE", callback=_path,
              help="Install this hand-downloaded release archive instead of downloading (verified).")
@click.option("--lock", metavar="FILE", callback=_path,
              help="Run the release, mechanism and settings a `find` locked in FILE (zluda.lock); nothing "
              "chosen again (excludes --zluda-dir).")
@click.option("--no-record", is_flag=True, help="Do not keep this run's results in the results store.")
@click.option("--no-defaults", is_flag=True,
              help="Apply none of the settings a ZLUDA launch needs (the plan lists them, with reasons).")
@click.option("--monitor", is_flag=True,
              help="Sample the GPU while the workload runs; print utilisation, VRAM and power at exit.")
@click.option(
    "--results-db",
    metavar="URL",
    envvar="ZLUDA_RUNNER_RESULTS_DB",
    help="Results store: postgresql://... or a SQLite file (default: results.db in the cache folder).",
)
@click.pass_context
def main_group(ctx: click.Context, /, **given: Any) -> None:
    """Run unmodified CUDA programs on AMD GPUs through ZLUDA, and prove how well they run.

    \b
      zluda-run python infer.py            fetch the right ZLUDA, shim, launch
      zluda-run inspect                    what does this torch build need?
      zluda-run plan -- python infer.py    what would be done, and will it bind?
      zluda-run releases --os windows      which ZLUDA release fits?
    """
    from zluda_runner.api.options import Options
    from zluda_runner.commands.common import Invocation

    # every other global option is the Options field of its name (the one options record)
    asked = {name: given.pop(name) for name in ("as_json", "trace", "trace_out", "verify_load")}
    options = Options(record=not given.pop("no_record"), defaults=not given.pop("no_defaults"), **given)
    if asked["trace"]:  # refused where it cannot work (Windows) before anything is planned or fetched
        from zluda_runner.api.evidence import check_trace_supported

        check_trace_supported()
    ctx.obj = Invocation(options, json=asked["as_json"], trace=asked["trace"], trace_out=asked["trace_out"],
                         verify_load=asked["verify_load"])


def _wants_json(args: list[str]) -> bool:
    head = args[: args.index("--")] if "--" in args else args
    return "--json" in head


def main(argv: list[str] | None = None) -> None:
    """Console entry point: exit codes from :mod:`zluda_runner.core.exitcodes`."""
    args = sys.argv[1:] if argv is None else list(argv)
    make_standard_streams_safe()  # a cp1252 pipe on Windows: UTF-8, never UnicodeEncodeError
    try:
        code = main_group.main(args=args, prog_name="zluda-run", standalone_mode=False)
    except (Exception, KeyboardInterrupt) as exc:
        sys.exit(_failed(exc, as_json=_wants_json(args)))
    sys.exit(code if isinstance(code, int) else exitcodes.OK)


def _failed(exc: BaseException, *, as_json: bool) -> int:
    """What an exception out of the command line says (``--json``: the machine's reading of every outcome,
    Ctrl-C's too), and its exit code; anything else is raised again."""
    import json

    from zluda_runner.core.errors import UsageFault, ZludaRunnerError

    if isinstance(exc, ZludaRunnerError):  # raised outside a command's invoke
        report_error(exc, as_json=as_json)
        return exc.exit_code
    if isinstance(exc, (KeyboardInterrupt, click.exceptions.Abort)):
        said = str(exc.__cause__ or exc) or "interrupted"  # an interrupted fetch says what it kept
        if as_json:
            click.echo(json.dumps({"schema": JSON_SCHEMA_VERSION, "error": said, "hint": None,
                                   "exit_code": exitcodes.INTERRUPTED, "kind": "interrupted"}, indent=2))
        else:
            click.echo(said, err=True)
        return exitcodes.INTERRUPTED
    if isinstance(exc, click.ClickException):
        if as_json:
            report_error(UsageFault(exc.format_message(), exit_code=exc.exit_code), as_json=True)
        else:
            exc.show()
        return exc.exit_code
    raise exc

if __name__ == "__main__":
    main()
