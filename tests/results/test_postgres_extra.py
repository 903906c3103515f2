"""psycopg is an extra (zluda-runner[postgres]): without it, a postgresql:// store is a clear error."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import requires
from pathlib import Path


def test_psycopg_is_an_extra_not_a_dependency() -> None:
    needs = requires("zluda-runner") or []  # the installed metadata, as pip reads it
    psycopg = [r for r in needs if r.startswith("psycopg")]
    assert psycopg and all("extra ==" in r for r in psycopg), psycopg
    assert any('extra == "postgres"' in r.replace("'", '"') for r in psycopg)


def test_a_postgres_store_without_the_driver_names_the_extra(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"  # as if the extra were not installed
            "from zluda_runner.cli import main\n"
            "main(['--json', '--results-db', 'postgresql://u:secret@127.0.0.1:1/db', 'results', 'list'])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    error = json.loads(proc.stdout)
    assert error["kind"] == "results-store" and "postgresql://u:***@127.0.0.1:1/db" in error["error"], error
    assert "secret" not in error["error"]
    assert "zluda-runner[postgres]" in error["hint"] and "Traceback" not in proc.stderr
