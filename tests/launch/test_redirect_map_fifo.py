"""The redirector refuses a map that is not a regular file (issue 20, nothing-lost item 17).

``ZLUDA_RUNNER_REDIRECT_MAP`` naming a FIFO no program writes to blocked every process start that
inherits LD_AUDIT (the redirector's open() waited for a writer); a device (``/dev/zero``) was read as
an empty map and the process ran with NVIDIA's library. The map is now opened without waiting and
refused unless it is a regular file: the start fails loudly (127), never half-redirected, never a
hang. Real ld.so, the real redirector compiled from shims/redirect/redirect.c; each start runs under
a timeout, which is what fails on 5c673db (it hung)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.launch.test_loader import NAME, libs  # noqa: F401  (the real/replacement libfoo and targets)
from zluda_runner.launch.linux import compose_env
from zluda_runner.launch.redirect import MAP_ENV, redirect_launch


def _start(target: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(target)], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_a_fifo_as_the_redirect_map_is_refused_at_once(libs, tmp_path: Path) -> None:  # noqa: F811
    launch = redirect_launch(tmp_path / "cache", {NAME: libs["replacement"]})
    env = compose_env(os.environ, launch)
    good = _start(libs["rpath"], env)
    assert good.returncode == 0 and good.stdout.strip() == "replacement", good.stderr  # the map works
    fifo = tmp_path / "map.fifo"
    os.mkfifo(fifo)
    out = _start(libs["rpath"], {**env, MAP_ENV: str(fifo)})  # no writer: was a hang
    assert out.returncode == 127, (out.returncode, out.stdout, out.stderr)
    assert str(fifo) in out.stderr, out.stderr  # the redirector names the map it refused
    assert out.stdout == ""  # the program never ran with NVIDIA's (here: the real) library


def test_a_device_as_the_redirect_map_is_refused(libs, tmp_path: Path) -> None:  # noqa: F811
    zero = tmp_path / "zero"  # a private node, never /dev itself
    try:
        os.mknod(zero, stat.S_IFCHR | 0o644, os.makedev(1, 5))
    except (OSError, AttributeError) as exc:
        pytest.skip(f"a device node needs root (os.mknod): {exc}")
    launch = redirect_launch(tmp_path / "cache", {NAME: libs["replacement"]})
    env = compose_env(os.environ, launch)
    out = _start(libs["rpath"], {**env, MAP_ENV: str(zero)})  # read as an empty map: NVIDIA's ran
    assert out.returncode == 127 and str(zero) in out.stderr, (out.stdout, out.stderr)
    assert out.stdout == ""
