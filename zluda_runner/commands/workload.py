"""What ``zluda-run CMD`` does once its command line is read, whichever parser read it: click's ``run``
command (:mod:`zluda_runner.commands.launching`) or, for a plain launch, the fast recogniser of the global
options' table (:func:`launch_plain`, :func:`zluda_runner.commands.global_options.recognise`). One API
call prepares the launch (:func:`prepared`), its warnings and notes are said, then the workload starts.

No click here: a plain launch with a warm plan starts the workload without importing it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from zluda_runner.api.launching import Launch
    from zluda_runner.api.options import Options


def say_err(text: str) -> None:
    """One line on stderr, at once (the CLI's streams are made safe: :func:`make_standard_streams_safe`)."""
    print(text, file=sys.stderr, flush=True)


def warn(text: str) -> None:
    """One ``warning:`` line on stderr (what the API's ``on_warning`` hears)."""
    say_err(f"warning: {text}")


def prepared(command: Sequence[str], options: Options, *, strict: bool = False, injector: bool = False,
             verify_load: bool = False) -> Launch:
    """The launch of ``command`` prepared by the API (:func:`zluda_runner.api.launching.prepare_launch`; the
    host's warnings said as they are found), then its other warnings and the results store's notes said."""
    from zluda_runner.api.launching import prepare_launch

    launch = prepare_launch(command, options, injector=injector, strict=strict, verify_load=verify_load,
                            on_warning=warn)
    for line in [*(f"warning: {w}" for w in launch.warnings), *(f"results store: {n}" for n in launch.notes)]:
        say_err(line)
    return launch


def launch_plain(args: Sequence[str], environ: dict[str, str] | None = None) -> int | None:
    """``zluda-run ARGS`` when it is a plain launch (:func:`~zluda_runner.commands.global_options.recognise`):
    as click's ``run`` does it -- the x86-64 gate, the launch prepared worded for the command line, the run
    recorded under the command line's words -- then the workload becomes this process (``exec``; its exit
    status where it runs as a child). None: not a plain launch, for click's group to parse."""
    import os

    from zluda_runner.commands import global_options as table

    recognised = table.recognise(args, os.environ if environ is None else environ)
    if recognised is None:
        return None
    values, command = recognised
    options, _ = table.invocation_values(values)
    from zluda_runner.api.launching import start
    from zluda_runner.api.options import asked_for, worded_for
    from zluda_runner.core.arch import require_x86_64

    require_x86_64()
    words = ("zluda-run", *table.global_words(values), "run", *table.argument_words(command))
    with worded_for("command line"), asked_for(words):
        return start(prepared(command, options), replace=True)
