"""``zluda-run results list / show / matrix`` import click, the store and the view, nothing else (issue 28:
these commands are mostly start-up; benchmarks/results_store.py has the figures). No other stage, none of
the store's writers (bundles, recording, fingerprints, output files), no release stack for the known-good
locks of a store that has none, and not shutil, hashlib or tempfile. Each in a fresh interpreter, on a
store with runs in it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.results.test_matrix_cli import plant
from zluda_runner.commands import COMMAND_TABLE
from zluda_runner.results.backends import make_store

ROOT = Path(__file__).resolve().parents[2]
RUN = ("import json, sys\nfrom zluda_runner.cli import main\ntry:\n    main(sys.argv[1:])\n"
       "except SystemExit as exc:\n    code = exc.code\n"
       "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)")
STAGES = {"cli", "commands", "api", "core", "results", "report"}  # what a results reader is made of
WRITERS = {f"zluda_runner.{m}" for m in ("results.bundle", "results.recording", "results.fingerprint",
                                         "results.userfiles", "report.table", "report.matrix_html")}
NOT_NEEDED = {"shutil", "hashlib", "tempfile", "psycopg"}
COMMAND_MODULES = {f"zluda_runner.commands.{module}" for module, _ in COMMAND_TABLE.values()}  # the commands


def _imported(url: str, tmp_path: Path, *words: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ZLUDA_RUNNER_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", RUN, "--results-db", url, "results", *words], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    code, modules = json.loads(proc.stderr.splitlines()[-1])
    assert code in (0, None), proc.stderr
    return set(modules)


@pytest.mark.parametrize("words", [["list"], ["list", "--kind", "ab"], ["matrix"], ["matrix", "--json"],
                                   ["show", "RUN"]], ids=" ".join)
def test_a_results_reader_imports_the_store_and_its_view_only(words: list[str], tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    plant(url, tmp_path)
    if words[0] == "show":
        with make_store(url).open() as store:
            words = ["show", store.list_runs(limit=1)[0].run_id[:12]]
    modules = _imported(url, tmp_path, *words)
    ours = {m for m in modules if m.startswith("zluda_runner.")}
    assert {m.split(".")[1] for m in ours} <= STAGES, sorted(ours)
    assert not ours & WRITERS, sorted(ours & WRITERS)
    assert not {m for m in ours if m.startswith("zluda_runner.release")}
    assert not modules & NOT_NEEDED, sorted(modules & NOT_NEEDED)
    assert ours & COMMAND_MODULES == {"zluda_runner.commands.results"}, sorted(ours & COMMAND_MODULES)

