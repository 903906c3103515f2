"""A plan cache entry that is not as zluda-run wrote it is planned again, never a traceback and never
carried out (on e29888c a cache file holding ``[]``, ``null`` or ``{"inputs": [1]}`` ended every
``zluda-run`` of that command in an AttributeError, and a wrong type inside the cached plan, e.g. a
``link_map`` list, ended the launch in one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zluda_runner.conduct import plan as prepare
from zluda_runner.conduct import resolve
from zluda_runner.conduct.context import run_context
from zluda_runner.core.settings import Settings
from zluda_runner.launch.prepare import launch_env

_WHOLE = ["[]", "null", '"x"', "{}", '{"inputs": [1], "plan": {}}', '{"inputs": {}, "plan": []}',
          "[" * 100_000, '{"inputs": {"/x": null}, "plan": 5}']


def _cached(tmp_path: Path, release: Path, argv: list[str]) -> tuple[Settings, Path, dict[str, object]]:
    settings = Settings(zluda_dir=release, cache_dir=tmp_path / "cache")
    prepare.plan_run(run_context(argv, settings))
    (entry,) = (tmp_path / "cache" / "plans").glob("*.json")
    return settings, entry, json.loads(entry.read_text())


@pytest.mark.parametrize("text", _WHOLE, ids=range(len(_WHOLE)))
def test_a_corrupt_entry_is_planned_again(apps, standin_releases, zluda_run, tmp_path: Path,
                                          text: str) -> None:
    release = standin_releases["good"]
    argv = [str(apps["none"])]
    _, entry, good = _cached(tmp_path, release, argv)
    entry.write_text(text)
    proc = zluda_run(["--json", "--cache-dir", str(tmp_path / "cache"), "--zluda-dir", str(release), "plan",
                      "--", *argv])
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["bindings"] == good["plan"]["bindings"]  # type: ignore[index]
    assert json.loads(entry.read_text()) == good  # the entry is written again, whole


@pytest.mark.parametrize("edit", ["link_map", "env", "shim"])
def test_an_entry_with_a_wrong_type_inside_is_not_carried_out(apps, standin_releases, tmp_path: Path,
                                                             edit: str) -> None:
    release = standin_releases["good"]
    argv = [str(apps["none"])]
    settings, entry, good = _cached(tmp_path, release, argv)
    plan = json.loads(json.dumps(good["plan"]))
    if edit == "link_map":
        plan["link_map"] = [1]
    elif edit == "env":
        plan["env"] = {"A": 1}
    else:
        plan["bindings"][0]["shim"] = 5
    entry.write_text(json.dumps({**good, "plan": plan}))
    again = prepare.plan_run(run_context(argv, settings)).plan
    env = launch_env(again, settings.cache_dir)  # on e29888c: AttributeError / TypeError here
    assert env["LD_LIBRARY_PATH"]
    assert json.loads(entry.read_text()) == good


def test_an_intact_entry_is_still_a_hit(apps, standin_releases, tmp_path: Path, monkeypatch) -> None:
    argv = [str(apps["none"])]
    settings, _, _ = _cached(tmp_path, standin_releases["good"], argv)

    def refuse(*_a, **_k):  # type: ignore[no-untyped-def]
        raise AssertionError("inspected again although the plan is cached")

    monkeypatch.setattr(resolve, "inspect_target", refuse)
    assert prepare.plan_run(run_context(argv, settings)).plan.bindings
