"""Without MIOpen the doctor says what a run does about it -- ZLUDA's cuDNN not bound, torch's cuDNN
switched off unless the user keeps it on -- by the decision the plan makes
(plan/defaults_facts.without_miopen, plan/defaults.cudnn_off), and that installing MIOpen enables cuDNN."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doctor.test_doctor import _doctor, rocm62_tree
from zluda_runner.core.settings import Settings
from zluda_runner.core.wording import render
from zluda_runner.doctor import Status
from zluda_runner.plan.defaults import CUDNN_OFF, compute_defaults
from zluda_runner.plan.defaults_facts import gather_facts, read_host
from zluda_runner.plan.model import Binding, PlanTarget, ReleaseRef, ShimPlan
from zluda_runner.plan.unbound import packaged

PLAN = ShimPlan(
    release=ReleaseRef("upstream-v6", "6", "upstream", "zluda-linux-a7bf2ba.tar.gz", "/r"),
    target=PlanTarget(python="/venv/bin/python", torch="2.7.1+cu128", cuda="12.8",
                      torch_path="/venv/site/torch"),
    bindings=(Binding(need="libcuda.so.1", family="driver", action="replace", shim="/r/libcuda.so.1",
                      load_name="libcuda.so.1", mechanism="ld_library_path", verdict="ok"),))


CASES = [({}, True), ({"ZLUDA_RUNNER_DEFAULTS_OFF": "cudnn-off"}, True), ({}, False)]


@pytest.mark.parametrize(("switch", "defaults"), CASES, ids=["on", "switched-off", "defaults-off"])
def test_the_doctor_and_the_plan_decide_cudnn_alike(tmp_path: Path, switch: dict[str, str],
                                                    defaults: bool) -> None:
    root = rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    (root / "opt/rocm/lib/libMIOpen.so.1").unlink()
    env = {"ZLUDA_RUNNER_ROOT": str(root), **switch}
    facts = gather_facts(PLAN, read_host(env, "linux"), env, enabled=defaults, manifest=None)
    assert facts.miopen is None and facts.miopen_looked
    planned = {d.name: d for d in compute_defaults(facts)}[CUDNN_OFF]
    check = _doctor(root, env=env, settings=Settings(defaults=defaults)).check("miopen")
    told = check.details["default"]
    assert check.status is Status.WARN
    assert (told["name"], told["setting"], told["applied"], told["why_not"]) == (
        CUDNN_OFF, planned.setting, planned.applied, planned.why_not)
    assert told["applied"] is (not switch and defaults)
    shown = (planned.setting if planned.applied else render("{opt:no_defaults}") if not defaults
             else planned.why_not)
    assert shown in render(check.message) and packaged("libMIOpen.so.1") in check.fix  # what to install
    assert check.details["library"]["looked"] and facts.miopen_looked in check.message


def test_with_miopen_nothing_is_switched_off(tmp_path: Path) -> None:
    root = rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    env = {"ZLUDA_RUNNER_ROOT": str(root)}
    check = _doctor(root, env=env).check("miopen")
    assert check.status is Status.OK and "default" not in check.details
    facts = gather_facts(PLAN, read_host(env, "linux"), env, enabled=True, manifest=None)
    assert facts.miopen == "/opt/rocm/lib/libMIOpen.so.1"
