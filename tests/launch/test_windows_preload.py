"""The Windows preload hook: written once outside the target, chained to the environment's own
sitecustomize, inert off Windows (what it does on Windows, loading a DLL first, is proven under Wine
by tests/windows: a module already loaded as nvcuda.dll is the one cudart uses)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from zluda_runner.launch.windows_preload import PRELOAD_ENV, SITECUSTOMIZE, preload_env, write_preload


def test_preload_env_and_hook(tmp_path: Path) -> None:
    env = preload_env(["/z/nvcuda.dll", "/z/nvml.dll"], tmp_path, {"PYTHONPATH": "/user/site"}, sep=":")
    folder = write_preload(tmp_path)
    assert env["PYTHONPATH"] == f"{folder}:/user/site"
    assert env[PRELOAD_ENV] == "/z/nvcuda.dll:/z/nvml.dll"
    assert (folder / "sitecustomize.py").read_text() == SITECUSTOMIZE
    assert preload_env([], tmp_path, {}) == {}
    with pytest.raises(ValueError, match="separator"):
        preload_env(["C:\\a;b\\nvcuda.dll"], tmp_path, {})


def test_hook_chains_to_the_sitecustomize_it_shadows(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n")
    env = preload_env(["/z/nvcuda.dll"], tmp_path / "cache", {"PYTHONPATH": str(user)}, sep=":")
    code = ("import os, sys; "
            "print(os.environ.get('USER_SITECUSTOMIZE_RAN'), sys.modules['sitecustomize'].__file__)")
    out = subprocess.run([sys.executable, "-c", code], env={"PATH": "/usr/bin:/bin", **env},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", str(user / "sitecustomize.py")]
