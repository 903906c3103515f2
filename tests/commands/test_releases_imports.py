"""``zluda-run releases`` imports what it uses (issue 28: under Wine each module costs a file-system round
trip per sys.path entry, and ``releases`` was 10-17x ``python.exe -c pass``): the release stack, the host's
quick facts and GPUs, the target's facts read in this process (no second interpreter, no subprocess), the
view -- no plan model, loader model, binary reader, launcher, archive or network module. In a fresh
interpreter started as the command line is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ("import json, sys\nfrom zluda_runner.cli import main\nsys.argv = ['zluda-run', *sys.argv[1:]]\n"
       "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
       "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)")
NOT_NEEDED = ("subprocess", "shutil", "socket", "difflib", "hashlib", "tempfile", "requests",
              "rich", "elftools", "pefile", "mmap", "zluda_runner.plan.model", "zluda_runner.plan.defaults",
              "zluda_runner.binfmt", "zluda_runner.loader", "zluda_runner.host.libraries",
              "zluda_runner.inspection.inspect", "zluda_runner.core.child", "zluda_runner.launch",
              "zluda_runner.conduct.context", "zluda_runner.results.recording", "zluda_runner.probe")
OUR_MODULES_AT_MOST = 70  # (80 on main at dabe254, and a second interpreter started to ask the target; the
# 3 more since: core.observe, core.fileread, core.places -- the one host reader records what it observes;
# 2 more: commands.memo, commands.commandmemo -- a derivation is recorded, and the next one replayed)


def _imported(tmp_path: Path, *words: str) -> tuple[int, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ZLUDA_RUNNER_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", RUN, "releases", *words], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    code, modules = json.loads(proc.stderr.splitlines()[-1])
    assert code in (0, 3), proc.stderr
    return code, modules


@pytest.mark.parametrize("words", [[], ["--all"], ["--os", "windows", "--cuda", "cu118"]], ids=" ".join)
def test_releases_imports_only_what_it_uses(words: list[str], tmp_path: Path) -> None:
    _, modules = _imported(tmp_path, *words)
    heavy = [m for m in modules if m.startswith(NOT_NEEDED)]
    assert heavy == []
    ours = [m for m in modules if m.startswith("zluda_runner.")]
    assert len(ours) <= OUR_MODULES_AT_MOST, ours
    assert "zluda_runner.release.selection" in modules  # (what the check above would miss if nothing ran)
