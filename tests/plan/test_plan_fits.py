"""`zluda-run plan` and `doctor` at a terminal's width (issue 20, newcomer item 7): lines wrap at spaces;
a path or library name is never broken (rich folded a word wider than the terminal)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest


@pytest.mark.parametrize("width", [80, 120])
def test_plan_breaks_no_name(standin_releases, zluda_run, tmp_path: Path, width: int) -> None:
    deep = tmp_path / ("a-folder-with-a-long-name-" * 3) / "release"  # a path wider than 80 columns
    deep.parent.mkdir(parents=True)
    deep.symlink_to(standin_releases["good"], target_is_directory=True)
    argv = ["--cache-dir", str(tmp_path / "c"), "--zluda-dir", str(deep), "plan", "--", "sh", "-c", "true"]
    proc = zluda_run(argv, env={**os.environ, "COLUMNS": str(width)})
    assert proc.returncode in (0, 3), proc.stderr
    lines = proc.stdout.splitlines()
    wide = [line for line in lines if len(line) > width and " " in line.strip()]
    assert not wide, "\n".join(wide)
    whole = re.compile(rf"(?<![\w./-]){re.escape(str(deep))}")
    assert any(whole.search(line) for line in lines), proc.stdout  # whole, on one line
    for name in re.findall(r"\blib[\w.+-]*\.so[\w.]*", " ".join(proc.stdout.split())):
        assert any(re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", line) for line in lines), name


@pytest.mark.parametrize("width", [80, 120])
def test_doctor_lines_fit(zluda_run, tmp_path: Path, width: int) -> None:
    proc = zluda_run(["--cache-dir", str(tmp_path / ("a-cache-folder-with-a-long-name-" * 3)), "doctor"],
                     env={**os.environ, "COLUMNS": str(width)})
    lines = proc.stdout.splitlines()
    assert lines and lines[0].startswith("zluda-run doctor"), proc.stdout + proc.stderr
    wide = [line for line in lines if len(line) > width and " " in line.strip()]
    assert not wide, "\n".join(wide)
