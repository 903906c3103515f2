"""Release selection judges the GPU the workload gets (issue 22): on a host with an APU's integrated GPU as
HIP's device 0 and a dedicated GPU as device 1, the plan's ``dedicated-gpu`` default shows the workload
the dedicated one, so the manifest's GPU x HIP rules are judged on it: a rule only the integrated GPU
breaks refuses nothing; with ``--no-defaults``, the default switched off, or the user's own
``HIP_VISIBLE_DEVICES`` naming the integrated GPU, it refuses in the rule's words.

Fake host trees only (``ZLUDA_RUNNER_ROOT``). The KFD topology as the kernel writes it
(drivers/gpu/drm/amd/amdkfd/kfd_topology.c, ``node_show``: an APU's GPU node counts the CPU cores of its
package, ``gfx_target_version`` is major*10000 + minor*100 + stepping); Strix Point's Radeon 890M is
gfx1150, a Radeon RX 7900 XTX gfx1100; Debian's ``libamdhip64.so.6.4.*`` as in
tests/host/test_rules_wired.py, whose packaged ROCm 6.4 has no gfx115x kernels (the manifest's rule).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doctor.test_doctor import _kfd_node, _write
from tests.golden import assert_golden
from zluda_runner.conduct import resolve
from zluda_runner.conduct.context import run_context
from zluda_runner.core.settings import Settings
from zluda_runner.plan.defaults import DEDICATED_GPU, SWITCH_OFF_ENV
from zluda_runner.plan.defaults_facts import visibility_warnings
from zluda_runner.plan.hostread import read_host
from zluda_runner.release.selection import NothingFitsError

RULE = "gfx1150 with HIP 6.4: Debian's packaged ROCm 6.4 has no gfx115x/gfx12xx kernels"


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Debian's HIP 6.4; KFD node 0 the CPU, node 1 the APU's gfx1150 (device 0), node 2 a gfx1100 dGPU."""
    root = tmp_path / "host"
    _write(root, "sys/module/amdgpu/version", "6.8.5\n")
    _write(root, "dev/kfd")
    _kfd_node(root, 0, 0, simd=0, cpu_cores=16)
    _kfd_node(root, 1, 110500, simd=32, name="gfx1150", vram=0, cpu_cores=12)
    _kfd_node(root, 2, 110000, simd=192, name="gfx1100", vram=24 << 30)
    lib = root / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libamdhip64.so.6.4.43484").touch()
    (lib / "libamdhip64.so.6").symlink_to("libamdhip64.so.6.4.43484")
    _write(root, "etc/os-release", 'NAME="Debian GNU/Linux"\nID=debian\nVERSION_CODENAME=sid\n')
    monkeypatch.setenv("ZLUDA_RUNNER_ROOT", str(root))
    for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                "HSA_OVERRIDE_GFX_VERSION", "ZLUDA_RUNNER_MANIFEST", SWITCH_OFF_ENV):
        monkeypatch.delenv(var, raising=False)
    return root


def _select(settings: Settings) -> str | None:
    resolve.resolved(run_context((), settings), os_name=None, cuda=None)  # the host check: for any CUDA
    ctx = resolve.resolved(run_context((), settings), os_name="linux", cuda=13)
    return resolve.release_for(ctx, download=False).ref.id


def test_the_gpu_choice_is_the_plans_default(host: Path) -> None:
    env = {"ZLUDA_RUNNER_ROOT": str(host)}
    host_read = read_host(env, "linux")
    assert (host_read.default_gfx, host_read.gfx) == ("gfx1100", "gfx1150")  # the dedicated GPU, device 0
    users = read_host({**env, "HIP_VISIBLE_DEVICES": "0"}, "linux")
    assert users.default_gfx == users.gfx == "gfx1150"  # the user's own wins
    settings = Settings(cache_dir=host.parent / "cache")
    assert run_context((), settings, env).gfx == "gfx1100"
    assert run_context((), Settings(cache_dir=host.parent / "cache", defaults=False), env).gfx == "gfx1150"
    on_windows = read_host(env, "win32")  # no KFD topology there: HIP's own order, no gfx without HIP
    assert on_windows.gpus == () and on_windows.default_gfx is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the KFD topology is Linux's")
def test_a_rule_only_the_integrated_gpu_breaks_refuses_only_when_it_is_the_workloads(
        host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = host.parent / "cache"
    assert _select(Settings(cache_dir=cache)) == "upstream-v6"  # the dedicated gfx1100: no rule for it
    no_defaults = run_context((), Settings(cache_dir=cache, defaults=False))
    with pytest.raises(NothingFitsError) as err:
        resolve.resolved(no_defaults, os_name=None, cuda=None)  # HIP's device 0: the APU
    assert RULE in err.value.message
    with pytest.raises(NothingFitsError):
        resolve.resolved(no_defaults, os_name="linux", cuda=13)
    monkeypatch.setenv(SWITCH_OFF_ENV, "dedicated-gpu")
    with pytest.raises(NothingFitsError):
        _select(Settings(cache_dir=cache))
    monkeypatch.delenv(SWITCH_OFF_ENV)
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0")  # the user's own choice: the APU
    with pytest.raises(NothingFitsError):
        _select(Settings(cache_dir=cache))
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    assert _select(Settings(cache_dir=cache)) == "upstream-v6"


def _plan(host: Path, *global_opts: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")}
    env.update(ZLUDA_RUNNER_ROOT=str(host), XDG_CACHE_HOME=str(host.parent / "xdg"), **extra)
    argv = [sys.executable, "-m", "zluda_runner", "--cache-dir", str(host.parent / "cache"), *global_opts,
            "plan", "--", "true"]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the KFD topology is Linux's")
def test_plan_through_the_console_entry(host: Path) -> None:
    plain = _plan(host)
    assert RULE not in plain.stdout + plain.stderr
    assert "HIP_VISIBLE_DEVICES=1" in plain.stdout, plain.stdout + plain.stderr  # the default, in the plan
    refused = _plan(host, "--no-defaults")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert RULE in refused.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the KFD topology is Linux's")
@pytest.mark.parametrize("value", ["-1", "abc"])
def test_a_users_value_that_hides_every_gpu_is_judged_as_no_gpu(
        host: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """HIP_VISIBLE_DEVICES=-1 (or abc) hides every GPU (ROCclr ends the list at its first invalid entry):
    the APU's rule is not held against the run (it is not the workload's GPU), nor is any GPU judged,
    and the run's warnings say why, naming the variable and its value; the user's value still wins."""
    cache = host.parent / "cache"
    env = {"ZLUDA_RUNNER_ROOT": str(host), "HIP_VISIBLE_DEVICES": value}
    assert run_context((), Settings(cache_dir=cache), env).gfx is None  # not the APU's gfx1150: no GPU
    assert read_host(env, "linux").gfx is None  # restated for judging: past the last of 2 GPUs
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", value)
    assert _select(Settings(cache_dir=cache, defaults=False)) == "upstream-v6"  # no GPU rule refuses
    here = read_host(env, "linux")
    (warning,) = visibility_warnings("linux", here, env)
    assert f"HIP_VISIBLE_DEVICES={value!r}" in warning  # the variable and the user's value, named
    assert_golden(f"visibility_hides_every_gpu_{value}", warning + "\n")  # and why the workload sees no GPU
    assert visibility_warnings("windows", here, env) == ()  # another OS's workload does not run here


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the KFD topology is Linux's")
def test_the_plan_says_a_users_value_leaves_no_gpu(host: Path) -> None:
    shown = _plan(host, HIP_VISIBLE_DEVICES="-1")
    assert shown.returncode == 0, shown.stdout + shown.stderr  # the user's value wins: not refused
    env = {"ZLUDA_RUNNER_ROOT": str(host), "HIP_VISIBLE_DEVICES": "-1"}
    (warning,) = visibility_warnings("linux", read_host(env, "linux"), env)  # its words: a golden file above
    out = " ".join((shown.stdout + shown.stderr).split())
    assert f"warning: {' '.join(warning.split())}" in out
    assert RULE not in out  # the APU it hides is not judged
    data = json.loads(_plan(host, "--json", HIP_VISIBLE_DEVICES="-1").stdout)
    assert warning in data["warnings"]
    gpu = {d["name"]: d for d in data["defaults"]}[DEDICATED_GPU]
    assert (gpu["applied"], gpu["why_not"]) == (False, "you set HIP_VISIBLE_DEVICES=-1")  # the user's wins
