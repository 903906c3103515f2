"""The results views, whole, against their golden files (tests/golden.py), at 80 columns: `results
list`, `show` (an A/B run) and `matrix`, from the planted store of the matrix tests (two releases x two
GPUs x two torch builds, at fixed dates). A run's id is random (``<run>``); what a recording takes from
the running host (its uname, its name) is given."""

from __future__ import annotations

import json
import platform
import re
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.golden import assert_golden
from tests.results.test_matrix_cli import plant
from zluda_runner.cli import main_group


def _results(*args: str) -> tuple[int, str]:
    argv = ["--results-db", "s/results.db", "--cache-dir", "c", "results", *args]
    out = CliRunner().invoke(main_group, argv, env={"COLUMNS": "80", "ZLUDA_RUNNER_RESULTS_DB": None})
    return out.exit_code, out.output


@pytest.mark.parametrize("view", ["list", "show", "matrix"])
def test_results_views(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, view: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(platform, "uname", lambda: platform.uname_result("Linux", "lab", "6.8.0-golden", "#1",
                                                                          "x86_64"))
    monkeypatch.setattr(socket, "gethostname", lambda: "lab")
    plant("s/results.db", tmp_path)
    code, listed = _results("list", "--json")
    ids = [run["run_id"] for run in json.loads(listed)["runs"]]
    code, out = _results(view, *([ids[2]] if view == "show" else []))
    assert code == 0, out
    for run_id in ids:  # each id, and each shortening of it a view shows
        out = re.sub(rf"\b{run_id[:8]}[0-9a-f-]*", "<run>", out)
    assert_golden(f"results-{view}", out, tmp=tmp_path)
