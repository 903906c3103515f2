"""Several HIPs on one host, on fake trees (never this machine): every ROCm folder (Linux) or HIP SDK
(Windows) with its version, the one a run takes by default marked, the others one per version, and the
environment of a run that takes another (what the HIP finder, the library lookups and the loader read
first); the choice as an input of the run's context, a folder that is gone refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.host.test_hipsdk import WIN_ROCM, _sdk
from zluda_runner.conduct.context import context_env
from zluda_runner.core.errors import HostError
from zluda_runner.core.settings import Settings
from zluda_runner.host.fs import HostFs
from zluda_runner.host.hipchoice import chosen_env, installed_hips, other_hips
from zluda_runner.host.hipversion import find_host_hip
from zluda_runner.host.libraries import rocm_dirs


def _rocm(root: Path, version: str) -> str:
    """An AMD ROCm folder /opt/rocm-X.Y.Z: its package number and HIP's own header."""
    folder = root / f"opt/rocm-{version}"
    (folder / ".info").mkdir(parents=True)
    (folder / ".info/version").write_text(f"{version}-1\n")
    major, minor = version.split(".")[:2]
    (folder / "include/hip").mkdir(parents=True)
    (folder / "include/hip/hip_version.h").write_text(
        f"#define HIP_VERSION_MAJOR {major}\n#define HIP_VERSION_MINOR {minor}\n")
    (folder / "lib").mkdir()
    return f"/opt/rocm-{version}"


def test_linux_rocm_folders_one_per_install_the_used_one_marked(tmp_path: Path) -> None:
    old, new = _rocm(tmp_path, "6.2.0"), _rocm(tmp_path, "7.1.0")
    os.symlink("rocm-7.1.0", tmp_path / "opt/rocm")  # AMD's packages: /opt/rocm is the newest
    found = installed_hips(tmp_path, {}, "linux")
    assert [(i.path, i.version, i.used) for i in found] == [("/opt/rocm", "7.1.0-1", True),
                                                            (old, "6.2.0-1", False)]  # the link: one install
    assert [i.path for i in other_hips(tmp_path, {}, "linux")] == [old]
    # the HIP finder and the library lookups look in the same order: the HIP reported is the one loaded
    assert [d.rsplit("/", 1)[0] for d in rocm_dirs({}, HostFs(tmp_path))] == ["/opt/rocm", new, old]
    chosen = chosen_env({"LD_LIBRARY_PATH": "/mine", "PATH": "/bin"}, old, "linux")
    assert chosen == {"LD_LIBRARY_PATH": f"{old}/lib:/mine", "PATH": "/bin", "ROCM_PATH": old}
    assert chosen_env(chosen, old, "linux") == chosen  # the same when applied twice
    hip = find_host_hip(tmp_path, chosen, "linux")
    assert hip is not None and (hip.path, hip.major_minor) == (old, "6.2")
    assert [i.path for i in installed_hips(tmp_path, chosen, "linux") if i.used] == [old]
    assert [i.path for i in other_hips(tmp_path, chosen, "linux")] == ["/opt/rocm"]


def test_one_rocm_has_no_other(tmp_path: Path) -> None:
    _rocm(tmp_path, "6.4.1")
    assert other_hips(tmp_path, {}, "linux") == ()
    assert installed_hips(tmp_path / "empty", {}, "linux") == ()


def test_windows_hip_sdks_the_used_one_marked_and_the_others(tmp_path: Path) -> None:
    env = {"HIP_PATH": _sdk(tmp_path, "6.4"), "HIP_PATH_62": _sdk(tmp_path, "6.2"),
           "HIP_PATH_57": _sdk(tmp_path, "5.7"), "Path": r"C:\Windows;C:\Program Files\AMD\ROCm\6.4\bin"}
    found = installed_hips(tmp_path, env, "win32")
    assert [(i.version, i.used) for i in found] == [("6.4", True), ("6.2", False), ("5.7", False)]
    others = other_hips(tmp_path, env, "win32")
    assert [i.path for i in others] == [f"{WIN_ROCM}\\6.2", f"{WIN_ROCM}\\5.7"]
    chosen = chosen_env(env, others[0].path, "win32")
    assert chosen["HIP_PATH"] == f"{WIN_ROCM}\\6.2" and chosen["HIP_PATH_57"] == env["HIP_PATH_57"]
    assert chosen["Path"].split(";") == [f"{WIN_ROCM}\\6.2\\bin", r"C:\Windows", f"{WIN_ROCM}\\6.4\\bin"]
    assert "PATH" not in chosen  # Windows' own spelling of the variable is kept
    assert {i.version: i.used for i in installed_hips(tmp_path, chosen, "win32")} == {
        "6.4": False, "6.2": True, "5.7": False}


def test_the_choice_is_an_input_of_the_runs_context(tmp_path: Path) -> None:
    old = _rocm(tmp_path, "6.2.0")
    _rocm(tmp_path, "7.1.0")
    env = {"ZLUDA_RUNNER_ROOT": str(tmp_path)}
    assert context_env(Settings(cache_dir=tmp_path / "cache"), env) == env  # none chosen: as it is
    chosen = context_env(Settings(cache_dir=tmp_path / "cache", hip=old), env)
    assert chosen["ROCM_PATH"] == old and chosen["LD_LIBRARY_PATH"] == f"{old}/lib"
    with pytest.raises(HostError) as gone:
        context_env(Settings(cache_dir=tmp_path / "cache", hip="/opt/rocm-5.7.0"), env)
    assert gone.value.kind == "host" and "/opt/rocm-5.7.0" in gone.value.message
