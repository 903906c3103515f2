"""``--html FILE`` of poc and ab is checked before anything runs: a write that fails after the runs
(a folder, a read-only file system) would lose the whole report."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zluda_runner.results.userfiles import OutputFileError as ReportFileError
from zluda_runner.results.userfiles import output_path


def html_destination(path: Path) -> Path:
    return output_path(path, ())


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReportFileError, match="it is a folder") as refused:
        html_destination(tmp_path)
    assert refused.value.kind == "output-file" and "--html" in (refused.value.hint_for("command line") or "")


def test_a_folder_no_file_can_be_made_in_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only(*_args: object, **_kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr("zluda_runner.results.userfiles.tempfile.mkstemp", read_only)
    with pytest.raises(ReportFileError) as refused:
        html_destination(tmp_path / "r.html")
    assert os.strerror(errno.EROFS) in refused.value.message  # the system's reason, passed on


def test_a_writable_folder_is_left_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "old.html").write_text("old")
    assert html_destination(tmp_path / "r.html") == tmp_path / "r.html"
    assert html_destination(tmp_path / "old.html") == tmp_path / "old.html"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.html"]  # the probe is gone


@pytest.mark.parametrize("command", ["poc", "ab"])
def test_the_command_refuses_before_running_anything(tmp_path: Path, command: str) -> None:
    marker = tmp_path / "ran"
    touch = f"{sys.executable} -c \"open({str(marker)!r}, 'w')\""
    sides = (["--native", "--reference", touch, "--", sys.executable, "-c", "pass"] if command == "poc"
             else ["--a-cmd", touch, "--b-cmd", touch])
    done = subprocess.run([sys.executable, "-m", "zluda_runner", "--json", command, "--html", str(tmp_path),
                           *sides], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert json.loads(done.stdout)["error"] == f"cannot write the HTML report to {tmp_path}: it is a folder"
    assert not marker.exists()


@pytest.mark.parametrize("command", ["poc", "ab"])
def test_a_page_unwritable_after_the_runs_costs_only_the_page(tmp_path: Path, command: str) -> None:
    """The check passed, then the write failed (the workload made a folder where the page goes: root
    or not, no file can replace it): the report is still printed (JSON here), a warning says why the
    page is missing, exit 1 (a passing verdict) or the verdict's 3, no half page left."""
    python, page = sys.executable, tmp_path / "report.html"
    record = "from zluda_runner import ab; ab.record('out', [1.0, 2.0])"
    block = f"{python} -c \"import os; os.makedirs({str(page)!r}, exist_ok=True); {record}\""
    same = f"{python} -c \"{record}\""
    # poc --native here: 'on the GPU' fails (no GPU), so the verdict's 3 stands; ab agrees: 0, so 1
    sides, code = ((["--native", "--runs", "1", "--reference", block, "--", python, "-c", record], 3)
                   if command == "poc" else (["--runs", "1", "--a-cmd", block, "--b-cmd", same], 1))
    done = subprocess.run([python, "-m", "zluda_runner", "--no-record", "--json", command,
                           "--html", str(page), *sides], capture_output=True, text=True, timeout=120,
                          check=False)
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)  # the whole report, not an error
    assert "error" not in report and report["schema"] == 1, report
    assert f"warning: cannot write the HTML report to {page}: it is a folder; the report is printed " \
           "without it" in done.stderr, done.stderr
    assert done.returncode == code, done.stderr
    assert page.is_dir() and not list(page.iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
