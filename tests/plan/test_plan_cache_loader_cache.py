"""The warm plan's validity names the loader's cache the plan was made from: the fake root's
``etc/ld.so.cache`` under ``ZLUDA_RUNNER_ROOT``, the host's ``/etc/ld.so.cache`` otherwise. Until this stop it
always named the host's, so a test's warm plan depended on the machine's ld.so.cache (tests never read the
host), and under a fake root a new ROCm install there (its ld.so.cache rewritten) did not plan again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from zluda_runner.conduct import plan as prepare
from zluda_runner.conduct import resolve
from zluda_runner.conduct.context import run_context
from zluda_runner.core.settings import Settings
from zluda_runner.host.fs import ROOT_ENV


def _entry(cache: Path) -> dict[str, object]:
    (entry,) = (cache / "plans").glob("*.json")
    data: dict[str, object] = json.loads(entry.read_text())
    return data


def test_the_plan_is_valid_while_the_roots_loader_cache_is(apps, standin_releases, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    root = Path(os.environ[ROOT_ENV])  # the suite's empty fake root (tests/conftest.py)
    settings = Settings(zluda_dir=standin_releases["good"], cache_dir=tmp_path / "cache")
    argv = [str(apps["none"])]
    prepare.plan_run(run_context(argv, settings))
    inputs = _entry(tmp_path / "cache")["inputs"]
    assert isinstance(inputs, dict)
    assert "/etc/ld.so.cache" not in inputs  # the host's is not what this plan read
    assert inputs[str(root / "etc" / "ld.so.cache")] is None  # the root's: none there yet

    inspected: list[object] = []
    real = resolve.inspect_target
    monkeypatch.setattr(resolve, "inspect_target", lambda *a, **k: inspected.append(a) or real(*a, **k))
    prepare.plan_run(run_context(argv, settings))
    assert inspected == []  # warm: nothing inspected again
    cache_file = root / "etc" / "ld.so.cache"
    cache_file.parent.mkdir(exist_ok=True)
    try:
        cache_file.write_bytes(b"glibc-ld.so.cache1.1")  # a ROCm installed under the root: ldconfig ran
        prepare.plan_run(run_context(argv, settings))
        assert len(inspected) == 1  # planned again
        assert _entry(tmp_path / "cache")["inputs"][str(cache_file)] is not None  # type: ignore[index]
    finally:
        cache_file.unlink()
