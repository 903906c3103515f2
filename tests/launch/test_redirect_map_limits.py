"""The redirector never half-reads its map (issue 20, nothing-lost item 21).

A map over 256 KiB was cut there (the last path kept truncated), entries past 1024 were dropped,
and a deleted map was read as none: each time the process ran on with NVIDIA's library (here the
"real" libfoo behind the program's DT_RPATH). Now the redirector stops the start (127) with a message
naming the map and the limit, and zluda-run refuses to write such a map in the first place. Real
ld.so, the real redirector compiled from shims/redirect/redirect.c; each start under a timeout.
On 5c673db the starts printed "real" (exit 0) and map_text wrote the oversized maps."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.launch.test_loader import NAME, libs  # noqa: F401  (the real/replacement libfoo and targets)
from zluda_runner.core.errors import LaunchError
from zluda_runner.launch.linux import compose_env
from zluda_runner.launch.redirect import MAP_ENV, MAP_MAX_BYTES, MAP_MAX_ENTRIES, map_text, redirect_launch


def _start(target: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(target)], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def _env(libs: dict[str, Path], tmp_path: Path) -> tuple[dict[str, str], str]:  # noqa: F811
    launch = redirect_launch(tmp_path / "cache", {NAME: libs["replacement"]})
    env = compose_env(os.environ, launch)
    good = _start(libs["rpath"], env)
    assert good.returncode == 0 and good.stdout.strip() == "replacement", good.stderr  # the map works
    return env, Path(env[MAP_ENV]).read_text()


def _refused(out: subprocess.CompletedProcess[str], where: Path, limit: str) -> None:
    assert out.returncode == 127, (out.returncode, out.stdout, out.stderr)
    assert str(where) in out.stderr and limit in out.stderr, out.stderr  # names the map and the limit
    assert out.stdout == ""  # never ran with NVIDIA's (here: the real) library


def test_a_map_over_256_kib_is_refused_not_cut(libs, tmp_path: Path) -> None:  # noqa: F811
    env, entry = _env(libs, tmp_path)
    big = tmp_path / "big.tsv"
    pad = "#" + "x" * 1022 + "\n"
    big.write_text(pad * (MAP_MAX_BYTES // len(pad)) + entry)  # the entry lies past the cut
    assert big.stat().st_size > MAP_MAX_BYTES
    _refused(_start(libs["rpath"], {**env, MAP_ENV: str(big)}), big, "262144 bytes")


def test_a_map_over_1024_entries_is_refused(libs, tmp_path: Path) -> None:  # noqa: F811
    env, entry = _env(libs, tmp_path)
    many = tmp_path / "many.tsv"
    many.write_text("".join(f"libdummy{i}.so\t/nonexistent/{i}\n" for i in range(MAP_MAX_ENTRIES)) + entry)
    _refused(_start(libs["rpath"], {**env, MAP_ENV: str(many)}), many, "1024")


def test_a_deleted_map_is_refused(libs, tmp_path: Path) -> None:  # noqa: F811
    env, _ = _env(libs, tmp_path)
    gone = Path(env[MAP_ENV])
    gone.unlink()
    _refused(_start(libs["rpath"], env), gone, "cannot be opened")


@pytest.mark.parametrize("count, length", [(MAP_MAX_ENTRIES + 1, 10), (200, 2000)])
def test_zluda_run_never_writes_a_map_the_redirector_refuses(tmp_path: Path, count: int, length: int) -> None:
    mapping = {f"lib{i}.so": tmp_path / ("d" * length) / f"lib{i}.so" for i in range(count)}
    with pytest.raises(LaunchError) as err:
        map_text(mapping)
    message = err.value.message  # the map's size beside the redirector's limits, and a shorter cache folder
    assert all(str(n) in message for n in (count, MAP_MAX_ENTRIES, MAP_MAX_BYTES)), message
    assert err.value.kind == "launch" and "--cache-dir" in (err.value.hint_for("command line") or "")
    assert len(map_text(dict(list(mapping.items())[:5])).splitlines()) == 5  # a small one is fine
