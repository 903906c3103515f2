"""The ``zluda-run`` command: a thin click layer over the library.

``zluda-run python infer.py`` is ``zluda-run run -- python infer.py``: any first
word that is not one of our commands (or anything after ``--``) is the workload.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from zluda_runner import __version__
from zluda_runner.commands import COMMAND_MODULES, load_command
from zluda_runner.core.errors import ZludaRunnerError
from zluda_runner.core.paths import CACHE_ENV, MANIFEST_ENV
from zluda_runner.core.settings import Settings

RUN_COMMAND = "run"


class FallthroughGroup(click.Group):
    """A group whose unknown first word (or ``--``) means: run this command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Find where the group's own options end; a "--" there forces `run`.
        ctx.meta["zluda_forced_run"] = False
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--":
                ctx.meta["zluda_forced_run"] = True
                args = [*args[:i], RUN_COMMAND, "--", *args[i + 1 :]]
                break
            if not arg.startswith("-"):
                if arg not in self.commands and arg not in COMMAND_MODULES:
                    args = [*args[:i], RUN_COMMAND, "--", *args[i:]]
                break
            opt = self._option_for(ctx, arg)
            if opt is not None and not opt.is_flag and "=" not in arg:
                i += 1  # skip the option's value
            i += 1
        return super().parse_args(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        # Commands are imported on first use (a cached `zluda-run CMD` must start fast).
        if cmd_name not in self.commands:
            command = load_command(cmd_name)
            if command is not None:
                self.add_command(command)
        return self.commands.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMAND_MODULES))

    def _option_for(self, ctx: click.Context, arg: str) -> click.Option | None:
        name = arg.split("=", 1)[0]
        for param in self.get_params(ctx):
            if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
                return param
        return None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ZludaRunnerError as exc:
            _report_error(exc)
            ctx.exit(exc.exit_code)


def _report_error(exc: ZludaRunnerError) -> None:
    click.echo(f"error: {exc.message}", err=True)
    if exc.hint:
        click.echo(f"hint: {exc.hint}", err=True)


def _path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None


@click.group(
    cls=FallthroughGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    invoke_without_command=False,
)
@click.version_option(__version__, prog_name="zluda-run")
@click.option(
    "--zluda-dir",
    metavar="DIR",
    callback=_path,
    help="Use an already unpacked or self-built ZLUDA instead of a manifest release.",
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
@click.pass_context
def main_group(
    ctx: click.Context,
    zluda_dir: Path | None,
    release: str | None,
    manifest: Path | None,
    cache_dir: Path | None,
    as_json: bool,
    python: str | None,
    force: bool,
    trace: bool,
    trace_out: Path | None,
    verify_load: bool,
) -> None:
    """Run unmodified CUDA programs on AMD GPUs through ZLUDA, and prove how well they run.

    \b
      zluda-run python infer.py            fetch the right ZLUDA, shim, launch
      zluda-run inspect                    what does this torch build need?
      zluda-run plan -- python infer.py    what would be done, and will it bind?
      zluda-run releases --os windows      which ZLUDA release fits?
    """
    settings = Settings(
        zluda_dir=zluda_dir,
        release=release,
        manifest=manifest,
        json=as_json,
        python=python,
        force=force,
        trace=trace,
        trace_out=trace_out,
        verify_load=verify_load,
    )
    if cache_dir is not None:
        settings.cache_dir = cache_dir
    ctx.obj = settings


def main(argv: list[str] | None = None) -> None:
    """Console entry point."""
    try:
        main_group.main(args=argv, prog_name="zluda-run", standalone_mode=True)
    except ZludaRunnerError as exc:  # raised outside a command's invoke
        _report_error(exc)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
