"""A command that downloads nothing imports no HTTP stack (issue 28: ``doctor`` imported requests, urllib3
and http.client through the release cache's module, 126 modules of its 468; under Wine each module is a
file-system round trip per sys.path entry). ``requests`` comes with a download only
(:func:`zluda_runner.release.install`). In a fresh interpreter started as the command line is."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ("import json, sys\nfrom zluda_runner.cli import main\nsys.argv = ['zluda-run', *sys.argv[1:]]\n"
       "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
       "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)")
HTTP_STACK = ("requests", "urllib3", "http.client", "zluda_runner.release.fetch",
              "zluda_runner.release.httpguard")


@pytest.mark.parametrize("words", [
    ["doctor"],
    ["--zluda-dir", "{release}", "plan", "--", "/bin/true"],
    ["status"],
    ["releases"],
], ids=lambda words: words[0] if words[0] != "--zluda-dir" else "plan")
def test_a_command_that_downloads_nothing_imports_no_http_stack(words: list[str], tmp_path: Path) -> None:
    release = tmp_path / "release"
    release.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ZLUDA_RUNNER_CACHE": str(tmp_path / "cache")}
    libc = next(line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
                if "/libc.so" in line or "/libc-" in line)  # this process's own C library, as mapped
    shutil.copyfile(libc, release / "libcuda.so.1")  # an ELF library where a release's driver lies
    argv = [w.replace("{release}", str(release)) for w in words]
    proc = subprocess.run([sys.executable, "-c", RUN, *argv], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    code, modules = json.loads(proc.stderr.splitlines()[-1])
    assert code in (0, 3), proc.stderr  # a finding (3) is a run that got to its work
    assert "zluda_runner.commands.toplevel" in modules  # (what the check below would miss if nothing ran)
    assert [m for m in modules if m.startswith(HTTP_STACK)] == []
