"""Acceptance (issue 29): a stand-in whose own ROCm library is missing from the host is not bound,
unless it is the driver or cuBLAS.

The release is the upstream v6 stand-in (:mod:`zluda_runner.devtools.standin_v6`: one library per
family, linked against stub ROCm libraries by their unversioned names, as upstream's xtask leaves
them); the host is a fake tree (``ZLUDA_RUNNER_ROOT``) whose ``/opt/rocm/lib`` holds those stubs less
the one a case leaves out, so the loader model finds the rest and decides. With MIOpen missing, the
real CPU torch of the test venv (planned as a CUDA 12.8 torch:
:mod:`tests.launch.test_defaults_in_workload`) runs and sees ``torch.backends.cudnn.enabled`` False.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.launch.test_defaults_in_workload import _env, _host, world  # noqa: F401 (the fixture)
from zluda_runner.devtools.standin import libs_from_spec
from zluda_runner.devtools.standin_v6 import ROCM_STUBS, build_v6_release

# one CUDA name per family the v6 layout serves (the stand-in merges each family's names)
SPEC = {name: {"soname": name} for name in (
    "libcuda.so.1", "libcublas.so.12", "libcublasLt.so.12", "libcudnn.so.9", "libcusparse.so.12",
    "libnvidia-ml.so.1")}


@pytest.fixture(scope="module")
def v6(cc_build: Callable[..., Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The v6 stand-in release, its stub ROCm libraries, and a script (a target that cannot be inspected:
    every library of the release is planned)."""
    base = tmp_path_factory.mktemp("unbound")
    release, rocm = base / "release", base / "rocm"
    build_v6_release(libs_from_spec(SPEC), release, rocm, build_dir=base / "build")
    script = base / "run.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    return {"release": release, "rocm": rocm, "script": script}


def _root(v6: dict[str, Path], root: Path, *, without: str) -> Path:
    """A ROCm 6.2 host (one RX 7900 XTX) whose /opt/rocm/lib has every stub ROCm library but ``without``."""
    _host(root, miopen=False, apu=False)
    for name in ROCM_STUBS:
        if name != without:
            shutil.copy2(v6["rocm"] / name, root / "opt/rocm/lib" / name)
    return root


def _plan(v6: dict[str, Path], root: Path, tmp_path: Path) -> dict[str, Any]:
    """``zluda-run --json plan`` for the script on the host ``root``."""
    env = {"PATH": "/usr/bin:/bin", "ZLUDA_RUNNER_ROOT": str(root)}
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--json", "--cache-dir", str(tmp_path / "cache"),
         "--zluda-dir", str(v6["release"]), "plan", "--", str(v6["script"])], capture_output=True, text=True,
        env=env, timeout=300, check=False)
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


@pytest.mark.parametrize(("missing", "family"), [
    ("libMIOpen.so.1", "cudnn"), ("libhipblaslt.so", "cublasLt"), ("librocsparse.so", "cusparse"),
    ("librocm_smi64.so", "nvml")])
def test_an_optional_stand_in_without_its_rocm_library_is_not_bound(
        v6: dict[str, Path], tmp_path: Path, missing: str, family: str) -> None:
    plan = _plan(v6, _root(v6, tmp_path / "host", without=missing), tmp_path)
    assert plan["verdict"] == "warn", [b["problems"] for b in plan["bindings"]]
    left = [b for b in plan["bindings"] if b["family"] == family]
    assert left and all((b["action"], b["verdict"], b["mechanism"]) == ("unbound", "warn", "none")
                        for b in left)
    assert all(b["shim"] and missing in b["problems"][0] and missing in b["problems"][-1] for b in left)
    for b in left:  # NVIDIA's own library is what the loader takes: no link, no redirect to the stand-in
        assert b["need"] not in plan["link_map"] and b["need"] not in plan["redirect_map"]
    others = [b for b in plan["bindings"] if b["family"] != family]
    assert others and all((b["action"], b["verdict"]) == ("replace", "ok") for b in others)


@pytest.mark.parametrize("missing", ["librocblas.so", "libamdhip64.so"])
def test_the_driver_and_cublas_without_their_rocm_library_stay_fatal(
        v6: dict[str, Path], tmp_path: Path, missing: str) -> None:
    plan = _plan(v6, _root(v6, tmp_path / "host", without=missing), tmp_path)
    fatal = {b["family"] for b in plan["bindings"] if b["verdict"] == "fatal"}
    assert fatal == ({"cublas"} if missing == "librocblas.so" else {"driver", "cublas"})
    assert not [b for b in plan["bindings"] if b["action"] == "unbound" and b["family"] in fatal]


def _zluda_run(world: dict[str, Path], v6: dict[str, Path], root: Path,  # noqa: F811
               *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--cache-dir", str(world["cache"]), "--zluda-dir",
         str(v6["release"]), *args], capture_output=True, text=True, env=_env(root, world), timeout=300,
        check=False)


def test_without_miopen_torch_runs_with_cudnn_off_and_the_plan_says_why(
        world: dict[str, Path], v6: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    root = _root(v6, tmp_path / "host", without="libMIOpen.so.1")
    code = "import torch; print(torch.backends.cudnn.enabled)"
    proc = _zluda_run(world, v6, root, "--", str(world["python"]), "-c", code)
    assert (proc.returncode, proc.stdout) == (0, "False\n"), proc.stderr[-3000:]
    said = [line for line in proc.stderr.splitlines() if "libcudnn64_9.so" in line]  # the run says it too
    assert len(said) == 1 and "libMIOpen.so.1 (miopen-hip;" in said[0], proc.stderr
    planned = _zluda_run(world, v6, root, "--json", "plan", "--", str(world["python"]), "-c", code)
    assert planned.returncode == 0, planned.stderr[-3000:]
    data = json.loads(planned.stdout)
    assert data["verdict"] == "warn"
    cudnn = next(b for b in data["bindings"] if b["need"] == "libcudnn.so.9")
    assert (cudnn["action"], cudnn["verdict"]) == ("unbound", "warn")
    assert Path(cudnn["shim"]).name == "libcudnn64_9.so"
    assert "miopen-hip" in cudnn["problems"][0]  # the fix: the package that ships it
    off = next(d for d in data["defaults"] if d["name"] == "cudnn-off")
    assert off["applied"] and "libcudnn64_9.so" in off["reason"] and "libMIOpen.so.1" in off["reason"]
    lt = next(b for b in data["bindings"] if b["need"] == "libcublasLt.so.12")
    assert lt["action"] == "replace"  # hipBLASLt is there: only cuDNN is left out


def test_without_hipblaslt_addmm_leaves_cublaslt(world: dict[str, Path], v6: dict[str, Path],  # noqa: F811
                                                 tmp_path: Path) -> None:
    root = _root(v6, tmp_path / "host", without="libhipblaslt.so")
    planned = _zluda_run(world, v6, root, "--json", "plan", "--", str(world["python"]), "-c", "pass")
    assert planned.returncode == 0, planned.stderr[-3000:]
    data = json.loads(planned.stdout)
    lt = next(b for b in data["bindings"] if b["need"] == "libcublasLt.so.12")
    assert (lt["action"], Path(lt["shim"]).name) == ("unbound", "libcublaslt.so")
    addmm = next(d for d in data["defaults"] if d["name"] == "addmm-lt-off")
    assert addmm["applied"] and addmm["setting"] == "DISABLE_ADDMM_CUDA_LT=1"
    assert "libcublaslt.so" in addmm["reason"]
    assert data["env"]["DISABLE_ADDMM_CUDA_LT"] == "1"
