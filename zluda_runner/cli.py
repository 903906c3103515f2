"""The ``zluda-run`` command: a thin layer over the public API (:mod:`zluda_runner.api`).

``zluda-run python infer.py`` is ``zluda-run run -- python infer.py``: any first word that is not one of
our commands (or anything after ``--``) is the workload. A plain launch (global options of the launch, then
the workload) is read by the fast recogniser of the global options' table and started without importing
click (:func:`zluda_runner.commands.workload.launch_plain`), and ``zluda-run --help`` (``-h``,
``--version``) is answered from the option and command tables without it
(:func:`zluda_runner.commands.helptext.answer`); everything else goes to click's group
(:mod:`zluda_runner.commands.toplevel`, ``main_group`` here), with its usage errors and suggestions.
"""

from __future__ import annotations

import sys

from zluda_runner.core import exitcodes
from zluda_runner.core.textio import make_standard_streams_safe

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from zluda_runner.commands.commandmemo import Recorder
    from zluda_runner.core.errors import ZludaRunnerError

# click's side, imported on first use (a plain launch imports none of it): name -> its module
_CLICK_SIDE = dict.fromkeys(
    ("main_group", "FallthroughGroup", "RUN_COMMAND", "X86_COMMANDS", "COMMAND_FIRST"),
    "zluda_runner.commands.toplevel")


def __getattr__(name: str) -> object:
    if name in _CLICK_SIDE:
        import importlib

        return getattr(importlib.import_module(_CLICK_SIDE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def report_error(exc: ZludaRunnerError, *, as_json: bool = False) -> None:
    """``error:``/``hint:`` lines on stderr; with ``--json`` a JSON object on stdout
    (:func:`zluda_runner.commands.failure.report_error`)."""
    from zluda_runner.commands.failure import report_error as report

    report(exc, as_json=as_json)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: exit codes from :mod:`zluda_runner.core.exitcodes`."""
    args = sys.argv[1:] if argv is None else list(argv)
    make_standard_streams_safe()  # a cp1252 pipe on Windows: UTF-8, never UnicodeEncodeError
    recorder: Recorder | None = None
    try:
        from zluda_runner.commands import COMMAND_TABLE, REMEMBERED_COMMANDS

        if argv is None and not (args and args[0] in COMMAND_TABLE):  # the command line itself, no command
            from zluda_runner.commands.launchmemo import replay  # named: a remembered plain launch starts

            replay(args)
        if argv is None and not REMEMBERED_COMMANDS.isdisjoint(args):  # releases: said as remembered, or
            from zluda_runner.commands.commandmemo import begin  # derived and remembered

            recorder = begin(args)
        from zluda_runner.commands.helptext import answer

        code = answer(args)  # `zluda-run --help` (-h, --version) alone: our page, without click
        if code is None:
            from zluda_runner.commands.workload import launch_plain

            if argv is None:  # the process's own command line: a target that is this interpreter as it
                from zluda_runner.core.startstate import remember  # started is read here, not run again

                remember()

            code = launch_plain(args)
        if code is None:
            from zluda_runner.commands.toplevel import main_group

            code = main_group.main(args=args, prog_name="zluda-run", standalone_mode=False)
    except (Exception, KeyboardInterrupt) as exc:
        if recorder is not None:  # an error is never remembered
            recorder.stop()
        from zluda_runner.commands.failure import failed
        from zluda_runner.commands.toplevel import wants_json

        sys.exit(failed(exc, as_json=wants_json(args)))
    code = code if isinstance(code, int) else exitcodes.OK
    if recorder is not None:
        recorder.remember(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
