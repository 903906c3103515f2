"""One run reads the host and the manifest once (issue 27, point 1): the run's context (conduct/context)
carries them to the host check, the release resolution, the plan's cache key, its defaults and GPU x HIP
rule warnings, and the run's own warnings. A fake host (``ZLUDA_RUNNER_ROOT``): two KFD GPU nodes and
AMD's ROCm 6.4.1, as in tests/host/test_rules_wired.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.host.test_rules_wired import GFX1100, GFX1201, _amd_rocm, _gpus
from zluda_runner.conduct.plan import plan_run
from zluda_runner.conduct.run import plan_context, prepare_run
from zluda_runner.core.settings import Settings
from zluda_runner.host import gpus, hipsdk, quick, rocm
from zluda_runner.plan import defaults_facts
from zluda_runner.release import manifest, selection


@pytest.fixture
def reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often the run looked for the HIP install, walked the KFD topology, asked for the manifest,
    resolved the release."""
    root = tmp_path / "host"
    _gpus(root, GFX1100, GFX1201)
    _amd_rocm(root, "6.4.1")
    monkeypatch.setenv("ZLUDA_RUNNER_ROOT", str(root))
    for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                "ZLUDA_RUNNER_MANIFEST"):
        monkeypatch.delenv(var, raising=False)
    counts: Counter[str] = Counter()

    def counted(key: str, real: Callable[..., object]) -> Callable[..., object]:
        def call(*args: object, **kwargs: object) -> object:
            counts[key] += 1
            return real(*args, **kwargs)
        return call

    for module in (quick, rocm, hipsdk):
        monkeypatch.setattr(module, "find_host_hip", counted("hip", module.find_host_hip))
    walk = counted("kfd", gpus.kfd_gpu_nodes)
    monkeypatch.setattr(gpus, "kfd_gpu_nodes", walk)  # what gpus_from_kfd walks when given no nodes
    monkeypatch.setattr(defaults_facts, "kfd_gpu_nodes", walk)
    asked = counted("manifest", manifest.load_current_manifest)
    monkeypatch.setattr(manifest, "load_current_manifest", asked)
    monkeypatch.setattr(selection, "resolve", counted("resolve", selection.resolve))
    return counts


def test_a_run_reads_the_host_and_the_manifest_once(standin_releases: dict[str, Path], apps: dict[str, Path],
                                                    tmp_path: Path, reads: Counter[str]) -> None:
    settings = Settings(zluda_dir=standin_releases["good"], cache_dir=tmp_path / "cache", force=True)
    prepare_run([str(apps["rpath"])], settings)
    assert reads == {"hip": 1, "kfd": 1, "manifest": 1}  # the manifest for the GPU x HIP rules alone
    prepare_run([str(apps["rpath"])], settings)  # the cached plan: the host's facts are the run's own
    assert reads == {"hip": 2, "kfd": 2, "manifest": 2}


def test_a_plan_reads_them_once(apps: dict[str, Path], tmp_path: Path, reads: Counter[str]) -> None:
    ctx = plan_context([str(apps["rpath"])], Settings(cache_dir=tmp_path / "cache"))
    plan = plan_run(ctx, download=False).plan
    assert plan.release is not None and plan.release.id == "upstream-v6"
    assert reads == {"hip": 1, "kfd": 1, "manifest": 1, "resolve": 1}  # the host is judged by the plan's one


def test_a_recorded_run_names_what_its_context_planned(
        standin_releases: dict[str, Path], apps: dict[str, Path], tmp_path: Path, reads: Counter[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``poc`` plans its run once (the target inspected once, the host and the manifest read once), and its
    recording names that plan's release and target and that host, read off the run's context. At 15c2f2b
    the recording made a second context and planned again: HIP looked for 3 times, the KFD walked 3 times,
    the manifest asked for twice."""
    from zluda_runner import Options
    from zluda_runner.api.poc import run_poc
    from zluda_runner.conduct import resolve as conduct_resolve
    from zluda_runner.results.backends import SQLiteStore

    real_inspect = conduct_resolve.inspect_target

    def inspect(*args: object, **kwargs: object) -> object:
        reads["inspect"] += 1
        return real_inspect(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(conduct_resolve, "inspect_target", inspect)
    db = tmp_path / "results.db"
    options = Options(zluda_dir=standin_releases["good"], cache_dir=tmp_path / "cache", force=True,
                      results_db=str(db))
    run_poc([str(apps["rpath"])], options=options, runs=1, min_speedup=0.0, timeout=30)
    assert reads == {"hip": 1, "kfd": 1, "manifest": 1, "inspect": 1}
    with SQLiteStore(db).open() as store:
        (run,) = store.list_runs()
    assert (run.kind, run.release_id) == ("poc", "zluda-dir")
    assert run.host is not None and run.host.get("gfx") == "gfx1100"  # the context's host: HIP's device 0
