"""The loader, for real: DT_RPATH beats LD_LIBRARY_PATH, our LD_AUDIT redirector beats DT_RPATH,
a link folder wins over DT_RUNPATH, and the real NVIDIA libcudart loads our stand-in driver.

Evidence comes from verify_bindings (LD_DEBUG logs) and, independently, from what the
target prints (which libfoo answered).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zluda_runner.launch.linux import LinuxLaunch, compose_env, prepare_link_dir
from zluda_runner.launch.redirect import DEBUG_ENV, redirect_launch
from zluda_runner.launch.verify import evidence_for, read_ld_debug_logs, verify_bindings

NAME = "libfoo.so.1"


@pytest.fixture(scope="module")
def libs(cc_build) -> dict[str, Path]:
    soname = f"-Wl,-soname,{NAME}"
    real = cc_build(["launch/foo.c"], NAME, args=['-DFOO_ID="real"', soname])
    repl = cc_build(["launch/foo.c"], NAME, args=['-DFOO_ID="replacement"', soname])

    def target(name: str, link_args: list[str]) -> Path:
        return cc_build(["launch/foo_main.c"], name, shared=False, args=[str(real), *link_args])

    return {
        "real": real,
        "replacement": repl,
        "rpath": target("foo_rpath", [f"-Wl,--disable-new-dtags,-rpath,{real.parent}"]),
        "runpath": target("foo_runpath", [f"-Wl,--enable-new-dtags,-rpath,{real.parent}"]),
        "plain": target("foo_plain", []),
    }


def _run(argv, env, expected, capfd):
    result = verify_bindings(argv, env, expected, timeout=60)
    printed = capfd.readouterr()
    return result, printed


def test_ld_library_path_loses_to_rpath(libs, tmp_path: Path, capfd) -> None:
    links = prepare_link_dir(tmp_path / "cache", {NAME: libs["replacement"]})
    env = compose_env(os.environ, LinuxLaunch(link_dir=links))
    result, printed = _run([str(libs["rpath"])], env, {NAME: libs["replacement"]}, capfd)
    assert result.exit_code == 0
    assert printed.out.strip() == "real"
    [binding] = result.bindings
    assert not binding.taken
    assert binding.actual is not None and os.path.realpath(binding.actual) == os.path.realpath(libs["real"])
    assert any("RPATH from file" in line for line in binding.loader_lines)


def test_redirector_beats_rpath(libs, tmp_path: Path, capfd) -> None:
    launch = redirect_launch(tmp_path / "cache", {NAME: libs["replacement"]})
    launch.env[DEBUG_ENV] = "1"
    env = compose_env(os.environ, launch)
    result, printed = _run([str(libs["rpath"])], env, {NAME: libs["replacement"]}, capfd)
    assert result.exit_code == 0
    assert printed.out.strip() == "replacement"
    assert f"redirect {NAME} -> {launch.link_dir / NAME}" in printed.err  # the link-folder entry
    [binding] = result.bindings
    assert binding.taken, binding.loader_lines
    assert binding.actual == Path(os.path.realpath(libs["replacement"]))
    assert binding.pids
    assert any(str(launch.link_dir / NAME) in line for line in binding.loader_lines)


def test_redirector_leaves_unmapped_names_alone(libs, tmp_path: Path, capfd) -> None:
    launch = redirect_launch(tmp_path / "cache", {"libother.so.9": libs["replacement"]})
    env = compose_env(os.environ, launch)
    result, printed = _run([str(libs["rpath"])], env, {NAME: libs["real"]}, capfd)
    assert printed.out.strip() == "real"
    assert result.all_taken


@pytest.mark.parametrize("target", ["runpath", "plain"])
def test_link_dir_wins_without_rpath(libs, tmp_path: Path, capfd, target: str) -> None:
    links = prepare_link_dir(tmp_path / "cache", {NAME: libs["replacement"]})
    env = compose_env(os.environ, LinuxLaunch(link_dir=links))
    result, printed = _run([str(libs[target])], env, {NAME: libs["replacement"]}, capfd)
    assert printed.out.strip() == "replacement"
    [binding] = result.bindings
    assert binding.taken, binding.loader_lines
    assert any(str(links / NAME) in line for line in binding.loader_lines)


@pytest.mark.parametrize("mechanism", ["redirect", "link_dir"])
def test_libs_only_logs_are_understood(libs, tmp_path: Path, mechanism: str) -> None:
    """LD_DEBUG=libs without `files`: the parser falls back on `calling init` lines."""
    cache = tmp_path / "cache"
    mapping = {NAME: libs["replacement"]}
    if mechanism == "redirect":
        launch, target = redirect_launch(cache, mapping), libs["rpath"]
    else:
        launch, target = LinuxLaunch(link_dir=prepare_link_dir(cache, mapping)), libs["runpath"]
    env = compose_env(os.environ, launch)
    logs = tmp_path / "logs"
    logs.mkdir()
    env.update(LD_DEBUG="libs", LD_DEBUG_OUTPUT=str(logs / "ld"))
    out = subprocess.run([str(target)], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "replacement"
    parsed = read_ld_debug_logs(logs)
    [binding] = evidence_for(parsed, mapping)
    assert binding.taken, binding.loader_lines
    [wrong] = evidence_for(parsed, {NAME: libs["real"]})
    assert not wrong.taken


CUDART_CLIENT = (
    "import ctypes, sys\n"
    "lib = ctypes.CDLL(sys.argv[1])\n"
    "n = ctypes.c_int(-1)\n"
    "rc = lib.cudaGetDeviceCount(ctypes.byref(n))\n"
    "print(rc, n.value)\n"
)


def test_real_cudart_loads_the_standin_driver(cc_build, cudart_path: Path, tmp_path: Path, capfd) -> None:
    standin = cc_build(["launch/cuda_standin.c"], "libcuda.so.1", args=["-Wl,-soname,libcuda.so.1"])
    links = prepare_link_dir(tmp_path / "cache", {"libcuda.so.1": standin})
    env = compose_env(os.environ, LinuxLaunch(link_dir=links))
    result, printed = _run(
        [sys.executable, "-c", CUDART_CLIENT, str(cudart_path)], env, {"libcuda.so.1": standin}, capfd
    )
    assert result.exit_code == 0
    rc = int(printed.out.split()[0])
    assert rc != 35, "cudart found no driver: the stand-in was not used"
    [binding] = result.bindings
    assert binding.taken, binding.loader_lines
    assert any("dynamically loaded by" in line and "libcudart" in line for line in binding.loader_lines)


_OPEN_BY_PATH = ("import ctypes, sys\n"
                 "fn = ctypes.CDLL(sys.argv[1]).foo_id\n"
                 "fn.restype = ctypes.c_char_p\n"
                 "print(fn().decode())\n")


@pytest.mark.parametrize("keep_path", [True, False])
def test_redirector_answers_a_path_request_in_a_child_without_the_link_folder(libs, tmp_path: Path,
                                                                              keep_path: bool) -> None:
    """A path request (torch's ctypes preload) for a mapped name is answered with the bare name, which
    the link folder on LD_LIBRARY_PATH serves; a child that dropped LD_LIBRARY_PATH (kept LD_AUDIT) got
    that bare name too on 7859508, and nothing loaded. Now it gets the mapped path."""
    launch = redirect_launch(tmp_path / "cache", {NAME: libs["replacement"]})
    launch.env[DEBUG_ENV] = "1"
    env = compose_env(os.environ, launch)
    if not keep_path:
        env.pop("LD_LIBRARY_PATH")
    out = subprocess.run([sys.executable, "-c", _OPEN_BY_PATH, str(libs["real"])], env=env, text=True,
                         capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert (out.returncode, out.stdout.strip()) == (0, "replacement"), out.stderr
    answer = NAME if keep_path else str(launch.link_dir / NAME)
    assert f"{libs['real']} -> {answer}\n" in out.stderr
