"""`zluda-run plan` and `doctor` at a terminal's width (issue 20, newcomer item 7): lines wrap at spaces;
a library name is never broken; a path wider than the line is broken only after a `/`, its pieces
on lines of their own (the plan is read, not copied from: --json has every path whole)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest


@pytest.mark.parametrize("width", [80, 120])
def test_plan_breaks_no_name(standin_releases, zluda_run, tmp_path: Path, width: int) -> None:
    deep = tmp_path.joinpath(*["a-folder-with-a-long-name"] * 3, "release")  # wider than 120 columns
    deep.parent.mkdir(parents=True)
    deep.symlink_to(standin_releases["good"], target_is_directory=True)
    argv = ["--cache-dir", str(tmp_path / "c"), "--zluda-dir", str(deep), "plan", "--", "sh", "-c", "true"]
    proc = zluda_run(argv, env={**os.environ, "COLUMNS": str(width)})
    assert proc.returncode in (0, 3), proc.stderr
    lines = proc.stdout.splitlines()
    wide = [line for line in lines if len(line) > width]
    assert not wide, "\n".join(wide)
    at = next(i for i, line in enumerate(lines) if line.strip() == "at")  # the release folder, below
    pieces: list[str] = []
    for line in lines[at + 1:]:
        pieces.append(line.strip())
        if not pieces[-1].endswith("/"):
            break
    assert len(pieces) > 1 and "".join(pieces) == str(deep), pieces  # broken after a /, nothing lost
    for name in re.findall(r"\blib[\w.+-]*\.so[\w.]*", " ".join(proc.stdout.split())):
        assert any(re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", line) for line in lines), name


@pytest.mark.parametrize("width", [80, 120])
def test_doctor_lines_fit(zluda_run, tmp_path: Path, width: int) -> None:
    proc = zluda_run(["--cache-dir", str(tmp_path / ("a-cache-folder-with-a-long-name-" * 3)), "doctor"],
                     env={**os.environ, "COLUMNS": str(width)})
    lines = proc.stdout.splitlines()
    assert lines and lines[0].startswith("zluda-run doctor"), proc.stdout + proc.stderr
    wide = [line for line in lines if len(line) > width]
    assert not wide, "\n".join(wide)
