"""`place` into a torch/lib this user may not write (issue 29: a Python under Program Files, run without
administrator rights): a clear error of kind ``not-writable`` naming the folder, with who can write it,
before anything changes (no journal folder, no file moved). On 3abffb6 the journal folder's mkdir raised
a PermissionError traceback. The folder is made read-only as test_restore_no_space does it (chmod for a
user; root ignores modes, so the immutable attribute)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.launch.test_restore_no_space import _read_only
from tests.launch.test_windows_placement import dlls, placements, snapshot, torch_lib  # noqa: F401
from tests.plan.test_windows_plan import windows_setup  # noqa: F401
from zluda_runner.cli import main_group
from zluda_runner.core.errors import NotWritableError
from zluda_runner.launch import windows
from zluda_runner.launch.windows.journal import JOURNAL_DIRNAME

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="chmod, chattr: POSIX")


def test_place_into_a_read_only_torch_lib_refuses_before_anything_changes(torch_lib, placements) -> None:  # noqa: F811
    before = snapshot(torch_lib)
    with _read_only(torch_lib), pytest.raises(NotWritableError) as info:
        windows.place(torch_lib, placements)
    error = info.value
    assert (error.kind, error.exit_code, error.paths) == ("not-writable", 1, (str(torch_lib),))
    assert error.details["folder"] == str(torch_lib) and str(torch_lib) in (error.hint or "")
    assert snapshot(torch_lib) == before and not (torch_lib / JOURNAL_DIRNAME).exists()
    assert windows.place(torch_lib, placements).placed  # writable again: it places


def test_the_command_says_which_folder_as_json_torch_lib_or_its_site_packages(
        windows_setup: tuple[Path, Path], tmp_path: Path) -> None:  # noqa: F811
    site, root = windows_setup
    work = tmp_path / "site"
    shutil.copytree(site, work)
    lib = work / "torch" / "lib"
    before = snapshot(work)
    argv = ["--json", "--force", "--zluda-dir", str(root), "--cache-dir", str(tmp_path / "cache"), "place",
            "--torch-lib", str(lib)]
    for read_only in (lib, work):  # torch/lib; then only site-packages, where the defaults hook goes
        with _read_only(read_only):
            res = CliRunner().invoke(main_group, argv, catch_exceptions=False)
        assert res.exit_code == 1, res.output
        error = json.loads(res.stdout)
        assert (error["kind"], error["exit_code"]) == ("not-writable", 1), error
        assert error["details"]["folder"] == str(read_only), error
        assert snapshot(work) == before and not (lib / JOURNAL_DIRNAME).exists()
    res = CliRunner().invoke(main_group, argv, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert windows.restore(lib, cache_dir=tmp_path / "cache").complete
