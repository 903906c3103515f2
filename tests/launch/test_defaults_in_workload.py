"""Acceptance (issue 22): the applied defaults, seen from inside a real Python workload on Linux.

The workload is this venv's real torch (2.13, a CPU build), in a venv of its own whose ``torch`` folder
is torch's files (links) with a ``version.py`` that says CUDA 12.8 and a ``lib/libtorch_cuda.so`` that
needs cuBLASLt and cuDNN (a C stub: real torch never loads it; it is what inspection reads), so
``zluda-run`` plans it as a CUDA torch. The releases are stand-ins (zluda_runner.devtools.standin):
one with only the driver, one that also serves cuBLASLt and cuDNN. The host (AMD GPUs, MIOpen) is a
fake tree (``ZLUDA_RUNNER_ROOT``): an APU and an RX 7900 XTX in the KFD topology, ROCm 6.2 with or
without MIOpen. The workload prints what torch and its environment say.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import put_elf, require
from tests.doctor.test_doctor import _kfd_node, _write
from zluda_runner.devtools.standin import build_release, libs_from_spec

WORKLOAD = """\
import json, os, sys
import torch
b = torch.backends
print("DEFAULTS=" + json.dumps({
    "flash": b.cuda.flash_sdp_enabled(), "mem_efficient": b.cuda.mem_efficient_sdp_enabled(),
    "math": b.cuda.math_sdp_enabled(), "cudnn": b.cudnn.enabled,
    "hip_visible_devices": os.environ.get("HIP_VISIBLE_DEVICES"),
    "addmm_lt": os.environ.get("DISABLE_ADDMM_CUDA_LT"),
    "user_sitecustomize": os.environ.get("USER_SITECUSTOMIZE_RAN"),
    "child": os.environ.get("CHILD"),
}))
if not os.environ.get("CHILD"):  # a child process inherits the settings (torchrun workers, spawns)
    os.environ["CHILD"] = "1"
    sys.exit(os.spawnv(os.P_WAIT, sys.executable, [sys.executable, __file__]))
"""
LIBS = {"libcuda.so.1": {"soname": "libcuda.so.1"}, "libcublasLt.so.12": {"soname": "libcublasLt.so.12"},
        "libcudnn.so.9": {"soname": "libcudnn.so.9"}}


@pytest.fixture(scope="module")
def world(cc_build: Callable[..., Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    spec = importlib.util.find_spec("torch")
    require(spec is not None and spec.origin is not None, "torch is not installed in the test venv")
    assert spec is not None and spec.origin is not None
    real = Path(spec.origin).parent
    base = tmp_path_factory.mktemp("defaults")
    driver_spec = {"libcuda.so.1": LIBS["libcuda.so.1"]}
    driver_only = build_release(libs_from_spec(driver_spec), base / "rel-driver",
                                build_dir=base / "build-driver")
    full = build_release(libs_from_spec(LIBS), base / "rel-full", build_dir=base / "build-full")
    base_python = Path(sys.base_prefix) / "bin" / "python3"
    subprocess.run([str(base_python), "-m", "venv", "--without-pip", str(base / "venv")], check=True)
    site = next((base / "venv" / "lib").glob("python3*/site-packages"))
    torch = site / "torch"
    (torch / "lib").mkdir(parents=True)
    for entry in real.iterdir():
        if entry.name not in ("version.py", "lib"):
            os.symlink(entry, torch / entry.name)
    for entry in (real / "lib").iterdir():
        os.symlink(entry, torch / "lib" / entry.name)
    text = (real / "version.py").read_text()
    assert "cuda: Optional[str] = None" in text, "torch's version.py changed shape"
    cuda = text.replace("cuda: Optional[str] = None", "cuda: Optional[str] = '12.8'")
    (torch / "version.py").write_text(cuda)
    stub = base / "torch_cuda.c"
    stub.write_text("int zluda_runner_test_torch_cuda(void) { return 0; }\n")
    built = cc_build([stub], "libtorch_cuda.so", args=[
        "-Wl,--no-as-needed", f"-L{full}", "-l:libcublasLt.so.12", "-l:libcudnn.so.9"])
    (torch / "lib" / "libtorch_cuda.so").write_bytes(built.read_bytes())
    (site / "zz_test_venv.pth").write_text(f"{real.parent}\n")  # torch's own dependencies, after ours
    user = base / "user-site"  # the user's own sitecustomize, which ours must hand over to
    _write(user, "sitecustomize.py", "import os\nos.environ['USER_SITECUSTOMIZE_RAN'] = '1'\n")
    workload = base / "workload.py"
    workload.write_text(WORKLOAD)
    return {"python": base / "venv" / "bin" / "python", "driver_only": driver_only, "full": full,
            "workload": workload, "user": user, "cache": base / "cache"}


def _host(root: Path, *, miopen: bool, apu: bool) -> Path:
    """ROCm 6.2 and the KFD topology as the kernel writes it (drivers/gpu/drm/amd/amdkfd/kfd_topology.c):
    the CPU node, then (``apu``) a Phoenix APU's GPU node (gfx1103: CPU cores, no VRAM bank), then an
    RX 7900 XTX (gfx1100, 24 GiB of VRAM)."""
    _write(root, "opt/rocm/.info/version", "6.2.0-66\n")
    _write(root, "opt/rocm/lib/libamdhip64.so.6.2.60200")
    if miopen:
        put_elf(root / "opt/rocm/lib/libMIOpen.so.1")
    _write(root, "dev/kfd")
    _kfd_node(root, 0, 0, simd=0, cpu_cores=16)
    node = 1
    if apu:
        _kfd_node(root, 1, 110003, simd=24, name="gfx1103", vram=0, cpu_cores=16)
        node = 2
    _kfd_node(root, node, 110000, simd=192, name="gfx1100", vram=24 << 30)
    return root


_DROPPED = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
            "CUDA_VISIBLE_DEVICES", "DISABLE_ADDMM_CUDA_LT", "ROCM_PATH", "HIP_PATH")


def _env(root: Path, world: dict[str, Path], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env.update(ZLUDA_RUNNER_ROOT=str(root), PYTHONPATH=str(world["user"]), **extra)
    return env


def _run(world: dict[str, Path], release: Path, root: Path, *flags: str,
         **env: str) -> list[dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--cache-dir", str(world["cache"]), "--zluda-dir",
         str(release), *flags, "--", str(world["python"]), str(world["workload"])],
        capture_output=True, text=True, env=_env(root, world, **env), timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = [json.loads(line.split("=", 1)[1]) for line in proc.stdout.splitlines()
            if line.startswith("DEFAULTS=")]
    assert len(seen) == 2, proc.stdout  # the workload and its child
    assert seen[0] == {**seen[1], "child": None}, seen  # the child sees the same settings
    return seen


def test_each_default_applied_inside_the_workload(world: dict[str, Path], tmp_path: Path) -> None:
    root = _host(tmp_path / "host", miopen=False, apu=True)
    seen = _run(world, world["driver_only"], root)[0]
    assert seen == {"flash": False, "mem_efficient": False, "math": True, "cudnn": False,
                    "hip_visible_devices": "1", "addmm_lt": "1", "user_sitecustomize": "1", "child": None}


def test_defaults_absent_without_their_facts(world: dict[str, Path], tmp_path: Path) -> None:
    """The release serves cuBLASLt and cuDNN, the host has MIOpen and one GPU: only fused attention is
    switched off (no ZLUDA release runs it correctly)."""
    root = _host(tmp_path / "host", miopen=True, apu=False)
    seen = _run(world, world["full"], root)[0]
    assert seen["flash"] is False and seen["mem_efficient"] is False and seen["math"] is True
    assert seen["cudnn"] is True and seen["hip_visible_devices"] is None and seen["addmm_lt"] is None
    no_miopen = _host(tmp_path / "host2", miopen=False, apu=False)
    assert _run(world, world["full"], no_miopen)[0]["cudnn"] is False  # the host fact alone calls for it


def test_no_defaults_and_the_users_own_values(world: dict[str, Path], tmp_path: Path) -> None:
    root = _host(tmp_path / "host", miopen=False, apu=True)
    off = _run(world, world["driver_only"], root, "--no-defaults")[0]
    assert off == {"flash": True, "mem_efficient": True, "math": True, "cudnn": True,
                   "hip_visible_devices": None, "addmm_lt": None, "user_sitecustomize": "1", "child": None}
    mine = _run(world, world["driver_only"], root, HIP_VISIBLE_DEVICES="0", DISABLE_ADDMM_CUDA_LT="0")[0]
    assert mine["hip_visible_devices"] == "0" and mine["addmm_lt"] == "0"
    assert mine["flash"] is False and mine["cudnn"] is False


def test_plan_json_lists_them(world: dict[str, Path], tmp_path: Path) -> None:
    root = _host(tmp_path / "host", miopen=False, apu=True)
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--json", "--cache-dir", str(world["cache"]), "--zluda-dir",
         str(world["driver_only"]), "plan", "--", str(world["python"]), str(world["workload"])],
        capture_output=True, text=True, env=_env(root, world), timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed = {d["name"]: d for d in json.loads(proc.stdout)["defaults"]}
    assert set(listed) == {"sdpa-fused-off", "cudnn-off", "addmm-lt-off", "dedicated-gpu"}
    assert all(d["applied"] and d["reason"] and d["source"] for d in listed.values())
    assert "cpu_cores_count 16" in listed["dedicated-gpu"]["reason"]


def test_the_api_launch_gets_the_same_defaults(world: dict[str, Path], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import zluda_runner as zr

    root = _host(tmp_path / "host", miopen=False, apu=True)
    for key, value in _env(root, world).items():
        monkeypatch.setenv(key, value)
    for key in set(os.environ) - set(_env(root, world)):
        monkeypatch.delenv(key)
    argv = [str(world["python"]), str(world["workload"])]
    on = zr.Options(zluda_dir=world["driver_only"], cache_dir=world["cache"])
    for options, flash, gpu in ((on, False, "1"), (replace(on, defaults=False), True, None)):
        launch = zr.prepare_launch(argv, options)
        proc = subprocess.run(list(launch.argv), env=dict(launch.env), capture_output=True, text=True,
                              timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        seen = json.loads(proc.stdout.splitlines()[0].split("=", 1)[1])
        assert seen["flash"] is flash and seen["hip_visible_devices"] == gpu, seen
        assert {d.name for d in launch.plan.defaults} >= {"sdpa-fused-off", "dedicated-gpu"}


PINNED_WORKLOAD = """\
import json, warnings
import torch
from torch.utils.data import DataLoader
t = torch.ones(3)
try:
    pinned = t.pin_memory()
    same, error = pinned is t, None
except RuntimeError as exc:  # this CPU build: the call reached the accelerator's host allocator
    same, error = False, type(exc).__name__
loader = DataLoader([torch.ones(2), torch.zeros(2)], batch_size=2, pin_memory=True)
with warnings.catch_warnings(record=True) as heard:
    warnings.simplefilter("always")
    batch = next(iter(loader))
print("PINNED=" + json.dumps({"same": same, "error": error, "loader": loader.pin_memory,
                              "batch_pinned": batch.is_pinned(), "batch": batch.tolist(),
                              "warnings": len(heard)}))
"""


def _pinned(world: dict[str, Path], tmp_path: Path, *flags: str) -> dict[str, object]:
    """The pinned-memory facts seen inside real torch 2.13, launched with the manifest's upstream-v6 (whose
    one Linux asset is the driver-only stand-in, packed: a release that lacks cuMemAllocHost and
    cuMemHostRegister by the manifest's data)."""
    from tests.conftest import one_asset_manifest
    from tests.release.conftest import tar_gz

    tmp_path.mkdir()
    archive = tmp_path / "zluda-linux-pinned.tar.gz"
    driver = (world["driver_only"] / "libcuda.so.1").read_bytes()
    archive.write_bytes(tar_gz([("dir", "zluda"), ("file", "zluda/libcuda.so.1", driver, 0o755),
                                ("symlink", "zluda/libcuda.so", "libcuda.so.1")]))
    manifest = one_asset_manifest(tmp_path, archive.read_bytes(), archive.name, "linux")
    workload = tmp_path / "pinned.py"
    workload.write_text(PINNED_WORKLOAD)
    root = _host(tmp_path / "host", miopen=False, apu=False)
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--cache-dir", str(tmp_path / "cache"), "--manifest",
         str(manifest), "--archive", str(archive), *flags, "--", str(world["python"]), str(workload)],
        capture_output=True, text=True, env=_env(root, world), timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line.split("=", 1)[1] for line in proc.stdout.splitlines() if line.startswith("PINNED=")]
    assert len(lines) == 1, proc.stdout
    seen: dict[str, object] = json.loads(lines[0])
    return seen


def test_pinned_memory_off_inside_real_torch_where_the_release_lacks_it(world: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    """torch 2.13's own code decides what is observable on its CPU build: ``Tensor.pin_memory()`` asks the
    accelerator's caching host allocator (here: none, a RuntimeError); with the default it returns the
    tensor itself, unpinned, and a DataLoader's ``pin_memory`` reads False, so its iterator neither pins
    nor warns that no accelerator can pin. ``--no-defaults`` leaves torch as it is."""
    on = _pinned(world, tmp_path / "on")
    assert on == {"same": True, "error": None, "loader": False, "batch_pinned": False,
                  "batch": [[1.0, 1.0], [0.0, 0.0]], "warnings": 0}
    off = _pinned(world, tmp_path / "off", "--no-defaults")
    assert off["same"] is False and off["error"] == "RuntimeError" and off["loader"] is True
    assert off["warnings"] == 1 and off["batch"] == on["batch"]  # torch's own warning; the same values
