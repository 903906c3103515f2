"""results import/list/show/matrix/delete under Windows CPython (Wine): the store on Windows paths, the
terminal sanitiser on Windows' console output (issue 20, nothing-lost items 9 and 10), the matrix's query
(issue 28)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.results import reports
from tests.windows.winpy import WinPython
from zluda_runner.results.recording import build_run

UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def test_results_import_list_show_delete_on_windows(winpy: WinPython, tmp_path: Path) -> None:
    report = reports.torch_ops(3, {1}, tag="\x1b]0;owned\x07")
    run = build_run("torch-ops", report, command=["zluda-run", "probe"], host=reports.HOST,
                    started_at="2025-10-01T10:00:00.000000Z", release={"id": "fork\x1b[2J"})
    bundle = tmp_path / "b.jsonl"
    bundle.write_text(json.dumps({"format": "zluda-runner-results", "version": 1}) + "\n"
                      + json.dumps({"run": run.to_dict()}) + "\n", encoding="utf-8")
    base = ("--cache-dir", winpy.winpath(tmp_path / "cache"), "results")

    as_json = ("--cache-dir", winpy.winpath(tmp_path / "cache"), "--json", "results")
    imported = winpy.zluda_run(*as_json, "import", winpy.winpath(bundle))
    assert imported.returncode == 0, imported.stderr
    assert (json.loads(imported.stdout)["imported"], json.loads(imported.stdout)["already_stored"]) == (1, 0)
    listed = winpy.zluda_run(*base, "list")
    shown = winpy.zluda_run(*base, "show", run.run_id[:12])
    for out in (listed, shown):
        assert out.returncode == 0, out.stderr
        assert not UNSAFE.search(out.stdout.replace("\n", "")), out.stdout
    assert "fork\\x1b[2J" in listed.stdout and "\\x1b]0;owned\\x07" in shown.stdout
    assert (tmp_path / "cache" / "results.db").is_file()
    matrix = winpy.zluda_run(*as_json, "matrix")  # the latest run of each kind found by the index walk
    assert matrix.returncode == 0, matrix.stderr
    (cell,) = json.loads(matrix.stdout)["cells"]
    assert (cell["release"], cell["torch_ops"]["run_id"], cell["torch_ops"]["passed"]) == (
        "fork\x1b[2J", run.run_id, 2), cell

    deleted = winpy.zluda_run(*as_json, "delete", run.run_id[:12])
    assert deleted.returncode == 0 and json.loads(deleted.stdout)["deleted"] == run.run_id, deleted.stderr
    after = winpy.zluda_run(*as_json, "list")
    assert after.returncode == 0 and json.loads(after.stdout)["runs"] == [], after.stdout + after.stderr
