"""With ``--json`` every usage error is a JSON object on stdout -- a bad option value, an unknown option, a
missing value, a misspelt command, a stray argument -- of kind ``usage`` with exit code 2, through the one
error path of the command line (zluda_runner.commands.failure), and nothing on stderr; without ``--json``
the same error is click's text on stderr."""

from __future__ import annotations

import json

import pytest

from zluda_runner.cli import main
from zluda_runner.core.exitcodes import USAGE
from zluda_runner.core.version import JSON_SCHEMA_VERSION

USAGE_ERRORS = [
    ["releases", "--json", "--gpu", "rx7900"],  # a value the API refuses as a usage error
    ["probe", "--json", "--budget", "x"],  # a value click refuses (its type)
    ["--json", "releases", "--os", "plan9"],  # not one of the choices
    ["results", "--json", "list", "--limit", "x"],  # a subcommand's option
    ["--json", "--bogus"],  # an unknown global option
    ["releases", "--json", "--bogus"],  # an unknown option of the command (with its suggestions)
    ["--json", "--release"],  # a missing value
    ["--json", "relases"],  # a misspelt command
    ["releases", "--json", "extra"],  # a stray argument
    ["--json", "--"],  # no workload
]


@pytest.mark.parametrize("argv", USAGE_ERRORS, ids=lambda a: " ".join(a))
def test_a_usage_error_with_json_is_a_json_object(argv: list[str], tmp_path, monkeypatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ZLUDA_RUNNER_CACHE", str(tmp_path))
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    error = json.loads(out)
    assert (exited.value.code, error["exit_code"], error["kind"], error["schema"]) == (
        USAGE, USAGE, "usage", JSON_SCHEMA_VERSION), out
    assert error["error"] and "hint" in error and err == "", (out, err)


@pytest.mark.parametrize("argv", USAGE_ERRORS[:3], ids=lambda a: " ".join(a))
def test_without_json_it_is_text_on_stderr(argv: list[str], tmp_path, monkeypatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ZLUDA_RUNNER_CACHE", str(tmp_path))
    with pytest.raises(SystemExit) as exited:
        main([a for a in argv if a != "--json"])
    out, err = capsys.readouterr()
    assert exited.value.code == USAGE and out == "" and err, (out, err)
