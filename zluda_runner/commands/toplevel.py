"""``zluda-run``'s click group: the global options (generated from their table,
:data:`zluda_runner.commands.global_options.GLOBAL_OPTIONS`) and the commands, imported on first use.

``zluda-run python infer.py`` is ``zluda-run run -- python infer.py``: any first word that is not one of our
commands (or anything after ``--``) is the workload. A plain launch never gets here
(:func:`zluda_runner.commands.workload.launch_plain`): whatever the fast recogniser does not take whole is
parsed here, with click's usage errors and suggestions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import click

from zluda_runner.commands import COMMAND_TABLE, load_command
from zluda_runner.commands.failure import report_error
from zluda_runner.commands.global_options import GLOBAL_OPTIONS, as_path, invocation_values, is_program
from zluda_runner.core.version import __version__

if TYPE_CHECKING:
    from pathlib import Path

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
        ctx.meta["zluda_json"] = wants_json(args)
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
        if is_program(word):
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


def _path(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    return as_path(value)


def _global_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """click's options of the group, one per row of the table, in its order."""
    for option in reversed(GLOBAL_OPTIONS):
        names = [option.name] if option.dest == option.name.lstrip("-").replace("-", "_") else [
            option.name, option.dest]
        function = click.option(*names, is_flag=option.flag, metavar=option.metavar, envvar=option.envvar,
                                callback=_path if option.path else None, help=option.help)(function)
    return function


@click.group(
    cls=FallthroughGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=False,
)
@click.version_option(__version__, prog_name="zluda-run")
@_global_options
@click.pass_context
def main_group(ctx: click.Context, /, **given: Any) -> None:
    """Run unmodified CUDA programs on AMD GPUs through ZLUDA, and prove how well they run.

    \b
      zluda-run python infer.py            fetch the right ZLUDA, shim, launch
      zluda-run inspect                    what does this torch build need?
      zluda-run plan -- python infer.py    what would be done, and will it bind?
      zluda-run releases --os windows      which ZLUDA release fits?
    """
    from zluda_runner.commands.common import Invocation

    options, asked = invocation_values(given)  # every other global option is the Options field of its name
    if asked["trace"]:  # refused where it cannot work (Windows) before anything is planned or fetched
        from zluda_runner.api.evidence import check_trace_supported

        check_trace_supported()
    ctx.obj = Invocation(options, json=bool(asked["as_json"]), trace=bool(asked["trace"]),
                         trace_out=cast("Path | None", asked["trace_out"]),
                         verify_load=bool(asked["verify_load"]))


def wants_json(args: list[str]) -> bool:
    """Was ``--json`` given (before ``--``: after it, it is the workload's)?"""
    head = args[: args.index("--")] if "--" in args else args
    return "--json" in head
