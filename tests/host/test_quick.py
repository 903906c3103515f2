"""The run path's cheap look at the host (host/quick.py), on fake root trees."""

from __future__ import annotations

from pathlib import Path

from tests.doctor.test_doctor import rocm62_tree
from zluda_runner.host.quick import quick_facts


def test_a_rocm_host_with_a_gpu_has_no_problems_and_a_fingerprint(tmp_path: Path) -> None:
    rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    (tmp_path / "dev").mkdir(exist_ok=True)
    (tmp_path / "dev" / "kfd").touch()
    facts = quick_facts(env={}, root=tmp_path, platform="linux")
    assert facts.problems == []
    assert facts.gfx == "gfx1100" and (facts.hip.version, facts.hip.origin) == ("6.2", "rocm")
    assert facts.fingerprint()["gfx"] == "gfx1100"


def test_nothing_installed_names_both_problems_gpu_first(tmp_path: Path) -> None:
    facts = quick_facts(env={}, root=tmp_path, platform="linux")
    assert facts.problems[0] == "no AMD GPU driver (/dev/kfd is missing)"
    assert facts.problems[1].startswith("no HIP/ROCm runtime found")
    assert facts.gfx is None and facts.hip.version is None


def test_a_distribution_hip_package_is_found(tmp_path: Path) -> None:
    lib = tmp_path / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libamdhip64.so.5.2.21153").touch()
    (lib / "libamdhip64.so.5").symlink_to("libamdhip64.so.5.2.21153")
    facts = quick_facts(env={}, root=tmp_path, platform="linux")
    assert facts.hip is not None and (facts.hip.version, facts.hip.origin) == ("5.2", "distribution")


def test_the_driver_is_named_alike_by_a_recorded_run_and_the_doctor(tmp_path: Path) -> None:
    """host/quick.amdgpu_driver, the one answer to "which amdgpu driver": a recorded run's fingerprint and
    the doctor's facts agree, with a version, an in-tree module (no version file) and no module at all
    (on main the run said "amdgpu (in-tree)" where the doctor said none was loaded)."""
    import shutil

    from tests.doctor.test_doctor import _doctor

    rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    module = tmp_path / "sys" / "module" / "amdgpu"
    seen = []
    for step in ("version", "in-tree", "no module"):
        if step == "in-tree":
            (module / "version").unlink()
        elif step == "no module":
            shutil.rmtree(module)
        run = quick_facts(env={}, root=tmp_path, platform="linux").fingerprint()["driver_version"]
        doctor = _doctor(tmp_path)
        assert run == doctor.facts.driver_version, step
        assert (doctor.check("driver").status.value == "ok") is (run is not None and step != "no module")
        seen.append(run)
    assert len(set(seen)) == 3 and seen[-1] is None
