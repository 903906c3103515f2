"""A value the command line passes to the API is held by the option's own type, so that a bad one is
click's usage error naming the option (exit 2), never the API's TypeError/ValueError in Python's words
(on d5e4bba ``warmup --heartbeat 0`` said "warmup(heartbeat=...) must be a number > 0, not float 0.0",
``place --torch-lib ''`` "place(torch_lib=...) must be a str or pathlib.Path", and ``inspect ''``
inspected the current folder)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.core import exitcodes


@pytest.mark.parametrize(("args", "option"), [
    (["warmup", "--heartbeat", "0", "--", "true"], "--heartbeat"),
    (["warmup", "--heartbeat", "nan", "--", "true"], "--heartbeat"),
    (["ab", "--timeout", "0", "--b-cmd", "true", "x.py"], "--timeout"),
    (["ab", "--atol", "inf", "--b-cmd", "true", "x.py"], "--atol"),
    (["probe", "--timeout", "-1"], "--timeout"),
    (["probe", "--torch", "--budget", "0"], "--budget"),
    (["poc", "--rtol", "nan", "--", "true"], "--rtol"),
    (["place", "--torch-lib", ""], "--torch-lib"),
    (["status", "--torch-lib", " "], "--torch-lib"),
    (["plan", "--torch-lib", ""], "--torch-lib"),
    (["inspect", ""], "PATH"),
    (["results", "export", ""], "FILE"),
    (["trace-report", ""], "PATH"),
])
def test_a_bad_value_is_the_command_lines_usage_error(args: list[str], option: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZLUDA_RUNNER_CACHE", str(tmp_path / "cache"))
    result = CliRunner().invoke(main_group, args)
    assert result.exit_code == exitcodes.USAGE, (result.output, result.exception)
    assert f"Invalid value for '{option}" in result.output or f"Invalid value for '[{option}" in result.output
    # the command line's words (exit 2, click's), not the API's argument check (exit 1, naming zluda_runner.)
    assert "zluda_runner." not in result.output and "Traceback" not in result.output, result.output
    assert not (tmp_path / "cache").exists()  # refused while parsing: nothing ran
