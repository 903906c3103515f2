"""Inputs that gave a traceback are clear errors (issue 20, nothing-lost item 15).

``~nosuchuser/x.db`` as the results store, a text schema version in the store, ``results export``
under a regular file, a symlinked lock file in the cache, ``http://[::1`` as the mirror: each is now
an error with a message and a hint (JSON with --json), exit 1. The real CLI in a child process; on
5c673db each printed a traceback."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _zluda(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "ZLUDA_RUNNER_CACHE": str(tmp_path / "cache"), **(env or {})}
    full.pop("ZLUDA_RUNNER_RESULTS_DB", None)
    cmd = [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "cache"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=full, cwd=REPO, timeout=120,
                          stdin=subprocess.DEVNULL)


def _case(tmp_path: Path, name: str) -> tuple[list[str], dict[str, str], str]:
    """The command line, environment and expected words of each case."""
    if name == "no-such-user":
        return ["--results-db", "~nosuchuser-zr/x.db", "results", "list"], {}, "home folder"
    if name == "text-schema-version":
        db = tmp_path / "r.db"
        with sqlite3.connect(db) as con:
            con.execute("CREATE TABLE schema_version (version TEXT, applied_at TEXT)")
            con.execute("INSERT INTO schema_version VALUES ('three', 'x')")
        return ["--results-db", str(db), "results", "list"], {}, "not a number"
    if name == "export-under-a-file":
        (tmp_path / "file").write_text("x")
        target = str(tmp_path / "file" / "o.jsonl")
        return ["--results-db", str(tmp_path / "r.db"), "results", "export", target], {}, "not a folder"
    if name == "symlinked-lock":
        locks = tmp_path / "cache" / "locks"
        locks.mkdir(parents=True)
        (locks / "upstream-v6.lock").symlink_to(tmp_path / "elsewhere.lock")
        return ["fetch", "upstream-v6"], {"ZLUDA_RUNNER_MIRROR": "http://127.0.0.1:9/"}, "symbolic link"
    assert name == "ipv6-mirror"
    return ["fetch", "upstream-v6"], {"ZLUDA_RUNNER_MIRROR": "http://[::1"}, "not a valid URL"


CASES = ["no-such-user", "text-schema-version", "export-under-a-file", "symlinked-lock", "ipv6-mirror"]


@pytest.mark.parametrize("name", CASES)
def test_a_clear_error_not_a_traceback(tmp_path: Path, name: str) -> None:
    args, env, words = _case(tmp_path, name)
    out = _zluda(tmp_path, *args, env=env)
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr + out.stdout, out.stderr
    assert "error:" in out.stderr and "hint:" in out.stderr and words in out.stderr, out.stderr


@pytest.mark.parametrize("name", CASES)
def test_a_clear_error_as_json(tmp_path: Path, name: str) -> None:
    args, env, words = _case(tmp_path, name)
    out = _zluda(tmp_path, "--json", *args, env=env)
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr + out.stdout, out.stderr
    doc = json.loads(out.stdout)
    assert words in doc["error"] and doc["hint"] and doc["exit_code"] == 1, doc


@pytest.mark.parametrize("as_json", [True, False])
def test_ctrl_c_is_exit_130_and_with_json_a_json_answer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    """Ctrl-C in any command: exit 130; --json reads it as JSON on stdout (it printed the bare word)."""
    from zluda_runner import cli
    from zluda_runner.commands import results

    def interrupted(*_args: object, **_kw: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(results, "list_results", interrupted)
    with pytest.raises(SystemExit) as caught:
        cli.main([*(["--json"] if as_json else []), "results", "list"])
    assert caught.value.code == 130
    out = capsys.readouterr()
    if as_json:
        assert json.loads(out.out) == {"schema": 1, "error": "interrupted", "hint": None, "exit_code": 130,
                                       "kind": "interrupted"}
    else:
        assert out.out == "" and out.err.strip() == "interrupted"
