"""A GPU rule's launch defaults (issue 29): on Windows, gfx1150-gfx1153 get ``cudnn-off`` whatever their HIP,
since conv2d through cuDNN hangs there while torch's own convolutions work (Speedstu/CUDA-for-AMD-Windows#3).
The host is given (a HostRead with the registry's GPUs), never read."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from zluda_runner.core.errors import ManifestError
from zluda_runner.core.hipfound import HipFound
from zluda_runner.host.fs import HostFs
from zluda_runner.host.quick import QuickFacts
from zluda_runner.plan.defaults import CUDNN_OFF, DefaultsFacts, HostGpu, compute_defaults
from zluda_runner.plan.defaults_facts import gather_facts
from zluda_runner.plan.hostread import REGISTRY, HostRead
from zluda_runner.plan.model import Binding, PlanTarget, ReleaseRef, ShimPlan
from zluda_runner.release.gpurules import gpu_defaults
from zluda_runner.release.manifest import default_manifest_path, load_manifest

ISSUE = "https://github.com/Speedstu/CUDA-for-AMD-Windows/issues/3"
# the release serves cuDNN and MIOpen is there: nothing but the GPU switches cuDNN off
SERVED = DefaultsFacts(os="windows", python=True, torch_version="2.7.1+cu128", flavour="upstream",
                       release_id="upstream-v6", served=("driver", "cublas", "cublasLt", "cudnn"),
                       miopen=r"C:\HIP\bin\MIOpen.dll", miopen_looked="MIOpen.dll")


@pytest.mark.parametrize("gfx", ["gfx1150", "gfx1151", "gfx1152", "gfx1153"])
def test_strix_on_windows_gets_cudnn_off_with_its_source(gfx: str) -> None:
    rules = load_manifest().gpu_hip_rules
    said = gpu_defaults(rules, (gfx,), "windows")
    assert list(said) == [CUDNN_OFF] and said[CUDNN_OFF].startswith(f"{gfx}: ") and ISSUE in said[CUDNN_OFF]
    [cudnn] = [d for d in compute_defaults(replace(SERVED, gpu_defaults=said)) if d.name == CUDNN_OFF]
    assert cudnn.applied and ISSUE in cudnn.reason


def test_other_gpus_and_linux_keep_cudnn() -> None:
    rules = load_manifest().gpu_hip_rules
    assert gpu_defaults(rules, ("gfx1100", "gfx1201"), "windows") == {}
    assert gpu_defaults(rules, ("gfx1150",), "linux") == {}
    assert [d.name for d in compute_defaults(SERVED) if d.name == CUDNN_OFF] == []


def test_the_plan_gathers_it_from_the_registrys_gpus() -> None:
    driver = Binding(need="nvcuda.dll", family="driver", action="replace", shim="C:/r/nvcuda.dll",
                     load_name="nvcuda.dll", mechanism="placement", verdict="ok")
    release = ReleaseRef("upstream-v6", "6", "upstream", "zluda-windows.zip", "C:/r")
    plan = ShimPlan(os="windows", release=release,
                    target=PlanTarget(python="C:/py/python.exe", torch="2.7.1+cu128", cuda="12.8",
                                      torch_path="C:/py/Lib/site-packages/torch"), bindings=(driver,))
    apu = HostGpu(0, "AMD Radeon 890M", "gfx1150", True, "registry")
    host = HostRead("win32", HostFs(None), QuickFacts(HipFound("7.2", "HIP SDK 7.2")), (apu,), REGISTRY,
                    None, None)
    facts = gather_facts(plan, host, {}, enabled=True, manifest=load_manifest())
    assert CUDNN_OFF in facts.gpu_defaults
    [cudnn] = [d for d in compute_defaults(facts) if d.name == CUDNN_OFF]
    assert cudnn.reason.startswith("gfx1150: ") or "; gfx1150: " in cudnn.reason
    assert ISSUE in cudnn.reason
    other = replace(host, gpus=(replace(apu, name="AMD Radeon RX 7900 XTX", gfx="gfx1100"),))
    assert gather_facts(plan, other, {}, enabled=True, manifest=load_manifest()).gpu_defaults == {}


def test_a_rule_default_must_be_known_and_explained(tmp_path: Path) -> None:
    doc = json.loads(default_manifest_path().read_text())
    for change in ({"defaults": ["sdpa-off"]}, {"defaults_why": ""}):
        bad = copy.deepcopy(doc)
        rule = next(r for r in bad["gpu_hip_rules"] if r.get("defaults"))
        rule.update(change)
        path = tmp_path / "m.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(ManifestError) as err:
            load_manifest(path)
        assert next(iter(change)) in str(err.value)
