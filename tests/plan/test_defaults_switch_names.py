"""``ZLUDA_RUNNER_DEFAULTS_OFF`` with a name no default has (a typo: ``sdpa-off`` for ``sdpa-fused-off``)
is said, by ``plan`` and by the run, with the names it takes: on e29888c it was silently ignored and the
default the user meant to switch off was applied anyway."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from tests.plan.test_defaults import _plan
from zluda_runner.plan.defaults import (
    SDPA_OFF,
    SWITCH_OFF_ENV,
    SWITCHABLE,
    DefaultsFacts,
    compute_defaults,
    switch_off_warning,
)
from zluda_runner.plan.defaults_facts import with_defaults
from zluda_runner.plan.hostread import read_host


def test_a_misspelt_name_is_named_with_the_names_it_takes() -> None:
    warning = switch_off_warning({SWITCH_OFF_ENV: "sdpa-off, cudnn-off,,sdpa-off"})
    assert warning is not None and "'sdpa-off'" in warning and warning.count("sdpa-off'") == 1
    assert "'cudnn-off'" not in warning and all(name in warning for name in SWITCHABLE)
    assert switch_off_warning({SWITCH_OFF_ENV: ",".join(SWITCHABLE)}) is None
    assert switch_off_warning({SWITCH_OFF_ENV: ""}) is None and switch_off_warning({}) is None
    facts = DefaultsFacts(python=True, torch_version="2.7.1", env={SWITCH_OFF_ENV: "sdpa-off"})
    assert {d.name: d.applied for d in compute_defaults(facts)}[SDPA_OFF]  # really not switched off


def test_the_plan_warns_once(tmp_path: Path) -> None:
    (tmp_path / "bare").mkdir()
    env = {"ZLUDA_RUNNER_ROOT": str(tmp_path / "bare"), SWITCH_OFF_ENV: "sdpa-off"}
    host = read_host(env)
    plan = with_defaults(_plan(), host, env, enabled=True, manifest=None)
    again = with_defaults(plan, host, env, enabled=True, manifest=None)  # applied again to a cached plan
    assert [w for w in again.warnings if SWITCH_OFF_ENV in w] == [switch_off_warning(env)]
    clean = with_defaults(replace(_plan(), warnings=()), host, {**env, SWITCH_OFF_ENV: "sdpa-fused-off"},
                          enabled=True, manifest=None)
    assert not [w for w in clean.warnings if SWITCH_OFF_ENV in w]


def test_plan_and_run_say_it(standin_releases, apps, zluda_run, tmp_path: Path) -> None:
    base = ["--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(standin_releases["good"])]
    env = {**os.environ, SWITCH_OFF_ENV: "dedicated_gpu"}
    plan = zluda_run([*base, "--json", "plan", "--", str(apps["none"])], env=env)
    assert plan.returncode == 0, plan.stderr
    assert any("'dedicated_gpu'" in w for w in json.loads(plan.stdout)["warnings"])
    run = zluda_run([*base, "--", "true"], env=env)
    assert run.returncode == 0, run.stderr
    said = f"warning: {SWITCH_OFF_ENV} names no default that can be switched off: 'dedicated_gpu'"
    assert said in run.stderr
