"""What an error out of the command line says, and its exit code: the one error path of ``zluda-run``
(:func:`failed` for whatever leaves a command, :func:`report_error` for the library's own errors). With
``--json`` every outcome is a JSON object on stdout (a usage error's kind is ``usage``, exit 2); else
``error:``/``hint:`` lines on stderr. Both worded for the command line (its flags and commands)."""

from __future__ import annotations

from zluda_runner.core import exitcodes
from zluda_runner.core.version import JSON_SCHEMA_VERSION

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (type checkers know the name)
if TYPE_CHECKING:
    from zluda_runner.core.errors import ZludaRunnerError


def _echo_json(payload: dict[str, object]) -> None:
    import json

    import click

    click.echo(json.dumps(payload, indent=2))


def report_error(exc: ZludaRunnerError, *, as_json: bool = False) -> None:
    """``error:``/``hint:`` lines on stderr; with ``--json`` a JSON object on stdout (both worded for
    the command line: its flags and commands)."""
    from zluda_runner.core.observe import taint

    taint("an error")  # (an error is said by a derivation only: a command that says one is not remembered)
    message, hint = exc.message_for("command line"), exc.hint_for("command line")
    if as_json:
        _echo_json({"schema": JSON_SCHEMA_VERSION, "error": message, "hint": hint, "exit_code": exc.exit_code,
                    "kind": exc.kind, **({"details": dict(getattr(exc, "details", {}))}
                                         if getattr(exc, "details", None) else {})})
        return
    from zluda_runner.report.terminal import say

    say([f"error: {message}", *([f"hint: {hint}"] if hint else [])], err=True)


def failed(exc: BaseException, *, as_json: bool) -> int:
    """What an exception out of the command line says (``--json``: the machine's reading of every outcome,
    Ctrl-C's too), and its exit code; anything else is raised again."""
    import click

    from zluda_runner.core.errors import UsageFault, ZludaRunnerError
    from zluda_runner.core.observe import taint

    taint("an error")

    if isinstance(exc, ZludaRunnerError):  # raised outside a command's invoke
        report_error(exc, as_json=as_json)
        return exc.exit_code
    if isinstance(exc, (KeyboardInterrupt, click.exceptions.Abort)):
        said = str(exc.__cause__ or exc) or "interrupted"  # an interrupted fetch says what it kept
        if as_json:
            _echo_json({"schema": JSON_SCHEMA_VERSION, "error": said, "hint": None,
                        "exit_code": exitcodes.INTERRUPTED, "kind": "interrupted"})
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
