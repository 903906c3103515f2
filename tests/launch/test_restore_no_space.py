"""`restore` where nothing can be written (issue 27): on a full disk or under a file-size limit the
checked originals go back by rename (the same file system: no space needed); in a read-only torch/lib a
clear PlacementError (JSON with --json) names the problem and where the originals are, never a
traceback. On 7859508 the copy back failed with EFBIG/ENOSPC, and the read-only folder with EPERM, as
OSError tracebacks."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.launch.test_windows_placement import ORIGINALS, dlls, placements, snapshot, torch_lib  # noqa: F401
from zluda_runner.cli import main_group
from zluda_runner.launch import windows
from zluda_runner.launch.windows.journal import JOURNAL_DIRNAME, ORIGINALS_DIR

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE, chattr: POSIX")
ROOT = Path(__file__).resolve().parents[2]

_RESTORE_LIMITED = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256))  # no file over 256 bytes may be written
from zluda_runner.launch.windows import restore
print(json.dumps(restore(Path(sys.argv[1])).to_dict()))
"""


def test_restore_under_a_file_size_limit_renames_the_originals_back(torch_lib, placements) -> None:  # noqa: F811
    before = snapshot(torch_lib)
    windows.place(torch_lib, placements)
    assert snapshot(torch_lib) != before and all((torch_lib / n).stat().st_size > 256 for n in ORIGINALS)
    out = subprocess.run([sys.executable, "-c", _RESTORE_LIMITED, str(torch_lib)], capture_output=True,
                         text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert sorted(result["restored"]) == sorted(ORIGINALS) and result["complete"] is True
    assert snapshot(torch_lib) == before and not (torch_lib / JOURNAL_DIRNAME).exists()


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """``folder`` made read-only: chmod for a user; root ignores modes, so the immutable attribute."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot make a folder read-only as root here (chattr +i: {done.stderr.strip()})")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_restore_in_a_read_only_torch_lib_is_a_clear_error(torch_lib, placements) -> None:  # noqa: F811
    before = snapshot(torch_lib)
    windows.place(torch_lib, placements)
    placed = snapshot(torch_lib)
    originals = torch_lib / JOURNAL_DIRNAME / ORIGINALS_DIR
    kept = snapshot(originals)
    with _read_only(torch_lib):
        res = CliRunner().invoke(main_group, ["--json", "restore", "--torch-lib", str(torch_lib)],
                                 catch_exceptions=False)
    assert res.exit_code == 1, res.output
    error = json.loads(res.stdout)
    assert error["exit_code"] == 1 and str(originals) in error["error"]
    assert snapshot(torch_lib) == placed and snapshot(originals) == kept  # nothing lost
    windows.restore(torch_lib)
    assert snapshot(torch_lib) == before  # writable: it finishes
