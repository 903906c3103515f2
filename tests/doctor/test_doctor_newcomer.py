"""Issue 29, a newcomer's fourth bullet, on a Debian 12 root with the distribution's HIP 5.2 (the fake tree
of tests/commands/test_first_contact.py) and the packaged manifest, at 80 columns. On 7859508 the release
check's message and fix of several lines were printed as one line with literal ``\\n`` in it, its fix ended
by pointing to `zluda-run doctor` (from inside the doctor), the marks' padding was lost where a line
wrapped (``[ok ]``), and the rocm check's fix named "5.7 for the fork's rocm5 build", a Windows zip, on a
Linux host."""

from __future__ import annotations

import json
import platform
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.commands.test_first_contact import debian_hip52_root
from tests.conftest import one_asset_manifest
from tests.golden import assert_golden
from zluda_runner.cli import main_group
from zluda_runner.release.manifest import load_current_manifest

MARKS = ("[ok  ] ", "[WARN] ", "[FAIL] ", "[n/a ] ")


def _doctor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *options: str) -> tuple[int, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(platform, "release", lambda: "6.1.0-golden")
    debian_hip52_root(tmp_path / "root")
    argv = [*options, "--cache-dir", "c", "doctor", "--root", "root"]
    out = CliRunner().invoke(main_group, argv, env={"COLUMNS": "80", "ZLUDA_RUNNER_MANIFEST": None})
    return out.exit_code, out.output


def test_the_view_keeps_its_line_breaks_and_aligned_marks(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """With a fixed manifest (the packaged upstream v6, its Linux asset: tests/conftest.py)."""
    one_asset_manifest(tmp_path, b"golden payload", "zluda-linux-golden.tar.gz", "linux")
    code, text = _doctor(tmp_path, monkeypatch, "--manifest", "manifest.json")
    assert code == 3, text
    lines = text.splitlines()
    assert "\\n" not in text and max(map(len, lines)) <= 80
    checks = [line for line in lines if line.startswith("[")]
    assert checks and all(line.startswith(MARKS) for line in checks)  # each mark 4 wide, as written
    assert all(line.startswith(("[", " ", "zluda-run doctor", "skipped:")) or line[0].isdigit()
               for line in lines)
    assert_golden("doctor-hip52", text, tmp=tmp_path)


def test_the_fixes_are_for_this_os_and_do_not_point_to_the_doctor(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    code, text = _doctor(tmp_path, monkeypatch, "--json")
    checks = {c["id"]: c for c in json.loads(text)["checks"]}
    assert code == 3 and checks["release"]["status"] == "fail" and checks["rocm"]["status"] == "warn"
    assert "`zluda-run doctor`" not in checks["release"]["fix"]
    manifest = load_current_manifest(None, tmp_path / "c")
    linux = {r.id for r in manifest.releases if any(a.os == "linux" for a in r.assets)}
    windows_only = {r.id for r in manifest.releases} - linux
    named = set(re.findall(r"[\w.-]+", checks["rocm"]["fix"])) & {r.id for r in manifest.releases}
    assert named and named <= linux and not named & windows_only  # releases built for linux only
    assert not any(a.name.split(".zip")[0] in checks["rocm"]["fix"]
                   for r in manifest.releases for a in r.assets if a.os == "windows")
