"""Without hipBLASLt the doctor says what a run does about it -- ZLUDA's cuBLASLt not bound, torch's addmm
kept off cuBLASLt (``DISABLE_ADDMM_CUDA_LT=1``) for a torch from 2.4 on unless the user says otherwise -- by
the decision the plan makes (plan/defaults_facts.without_hipblaslt, plan/defaults.addmm_lt_off), not by
telling the user to set what zluda-run sets itself."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.doctor.test_doctor import _doctor, rocm62_tree
from tests.doctor.test_doctor_miopen import PLAN
from zluda_runner.core.settings import Settings
from zluda_runner.core.wording import render
from zluda_runner.doctor import Status
from zluda_runner.plan.defaults import ADDMM_LT_OFF, compute_defaults
from zluda_runner.plan.defaults_facts import gather_facts, read_host
from zluda_runner.plan.model import ADDMM_LT_ENV
from zluda_runner.plan.unbound import packaged

CASES = [({}, True), ({"ZLUDA_RUNNER_DEFAULTS_OFF": ADDMM_LT_OFF}, True), ({ADDMM_LT_ENV: "0"}, True),
         ({}, False)]


@pytest.mark.parametrize(("env_more", "defaults"), CASES, ids=["on", "switched-off", "users-own", "off"])
def test_the_doctor_and_the_plan_decide_addmm_alike(tmp_path: Path, env_more: dict[str, str],
                                                    defaults: bool) -> None:
    root = rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    (root / "opt/rocm/lib/libhipblaslt.so").unlink()
    env = {"ZLUDA_RUNNER_ROOT": str(root), **env_more}
    # a torch 2.7 run whose release serves no cuBLASLt: what the plan decides for it
    plan = replace(PLAN, target=replace(PLAN.target, torch="2.7.1+cu128"))
    facts = gather_facts(plan, read_host(env, "linux"), env, enabled=defaults, manifest=None)
    planned = {d.name: d for d in compute_defaults(facts)}[ADDMM_LT_OFF]
    check = _doctor(root, env=env, settings=Settings(defaults=defaults)).check("hipblaslt")
    told = check.details["default"]
    assert check.status is Status.WARN
    assert (told["name"], told["setting"], told["applied"], told["why_not"]) == (
        ADDMM_LT_OFF, planned.setting, planned.applied, planned.why_not)
    assert told["applied"] is (not env_more and defaults)
    assert packaged("libhipblaslt.so") in check.fix and ADDMM_LT_ENV not in check.fix  # install, not set
    shown = (planned.setting if planned.applied else render("{opt:no_defaults}") if not defaults
             else planned.why_not)
    assert shown is not None and shown in render(check.message)


def test_with_hipblaslt_and_its_kernels_nothing_to_say(tmp_path: Path) -> None:
    root = rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    check = _doctor(root, env={"ZLUDA_RUNNER_ROOT": str(root)}).check("hipblaslt")
    assert check.status is Status.OK and "default" not in (check.details or {})
