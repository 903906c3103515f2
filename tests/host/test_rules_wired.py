"""The manifest's GPU x HIP rules (issue 22) reach the run, the plan and the doctor through the host facts
they read: the HIP's origin (a distribution's package, AMD's ROCm), the GPU the run uses (KFD topology,
``HIP_VISIBLE_DEVICES``), the manifest in use (``--manifest``). Fake host trees only (``ZLUDA_RUNNER_ROOT``);
nothing of this machine is read.

KFD ``gfx_target_version``: major*10000 + minor*100 + stepping (kernel drivers/gpu/drm/amd/amdkfd/
kfd_topology.c); Debian's ``libamdhip64.so.MAJOR.MINOR.PATCH`` naming as in
tests/doctor/test_doctor_gpu_rules.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.doctor.test_doctor import _kfd_node, _write
from zluda_runner.conduct import resolve
from zluda_runner.conduct.context import run_context
from zluda_runner.core.settings import Settings
from zluda_runner.doctor import DoctorOptions, Status, run_doctor
from zluda_runner.host.quick import hip_found
from zluda_runner.plan.hostread import read_host
from zluda_runner.release.manifest import default_manifest_path
from zluda_runner.release.model import GpuHipRule
from zluda_runner.release.selection import NothingFitsError

GFX1100, GFX1201 = 110000, 120001
DEBIAN_RULE = "Debian's packaged ROCm 6.4 has no gfx115x/gfx12xx kernels"


def _gpus(root: Path, *versions: int) -> None:
    """A CPU node, then one GPU node per ``versions`` (KFD node order: HIP's device order)."""
    _write(root, "sys/module/amdgpu/version", "6.8.5\n")
    _write(root, "dev/kfd")
    _kfd_node(root, 0, 0, simd=0, cpu_cores=16)
    for i, version in enumerate(versions, start=1):
        _kfd_node(root, i, version, simd=128, vram=16 << 30)


def _debian_hip_64(root: Path) -> None:
    lib = root / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libamdhip64.so.6.4.43484").touch()
    (lib / "libamdhip64.so.6").symlink_to("libamdhip64.so.6.4.43484")
    _write(root, "etc/os-release", 'NAME="Debian GNU/Linux"\nID=debian\nVERSION_CODENAME=sid\n')


def _amd_rocm(root: Path, version: str) -> None:
    _write(root, "opt/rocm/.info/version", f"{version}-1\n")


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake root every host reader of this process reads (the run path reads os.environ)."""
    root = tmp_path / "host"
    root.mkdir()
    monkeypatch.setenv("ZLUDA_RUNNER_ROOT", str(root))
    for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
                "HSA_OVERRIDE_GFX_VERSION", "ZLUDA_RUNNER_MANIFEST"):
        monkeypatch.delenv(var, raising=False)
    return root


def test_the_run_path_knows_where_its_hip_comes_from(tmp_path: Path) -> None:
    debian, amd = tmp_path / "debian", tmp_path / "amd"
    _debian_hip_64(debian)
    _amd_rocm(amd, "6.4.1")
    assert hip_found({}, debian, "linux").origin == "distribution"
    assert hip_found({}, amd, "linux").origin == "rocm"
    assert hip_found({}, tmp_path / "none", "linux").origin is None


def test_the_gpu_the_run_uses_follows_hip_visible_devices(tmp_path: Path) -> None:
    _gpus(tmp_path, GFX1100, GFX1201)

    def target_gfx(env: dict[str, str], platform: str = "linux") -> str | None:
        return read_host({**env, "ZLUDA_RUNNER_ROOT": str(tmp_path)}, platform).gfx

    assert target_gfx({}) == "gfx1100"
    assert target_gfx({"HIP_VISIBLE_DEVICES": "1"}) == "gfx1201"
    assert target_gfx({"ROCR_VISIBLE_DEVICES": "1"}) == "gfx1201"
    assert target_gfx({"HIP_VISIBLE_DEVICES": "5"}) is None  # every GPU hidden
    assert target_gfx({"HSA_OVERRIDE_GFX_VERSION": "11.0.0", "HIP_VISIBLE_DEVICES": "1"}) == "gfx1100"
    assert target_gfx({}, "win32") is None  # no gfx without asking HIP there


def test_the_run_is_refused_for_the_gpu_it_uses_with_the_rules_words(host: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _gpus(host, GFX1100, GFX1201)
    _debian_hip_64(host)
    settings = Settings(cache_dir=host.parent / "cache")
    resolve.resolved(run_context((), settings), os_name=None, cuda=None)  # device 0 is RDNA3: no rule for it
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")  # the RDNA4 one
    with pytest.raises(NothingFitsError) as err:
        resolve.resolved(run_context((), settings), os_name=None, cuda=None)
    selection = err.value.selection
    assert selection is not None and (err.value.kind, err.value.exit_code) == ("nothing-fits", 3)
    c = selection.constraints
    assert (c.gfx, c.hip, c.hip_from) == ("gfx1201", "6.4", "distribution")  # the GPU the run uses
    assert [r.label for r in selection.gpu_rules] == [DEBIAN_RULE]  # the rule it breaks
    (rule,) = selection.gpu_rules
    assert rule.reason("gfx1201", "6.4") in err.value.message  # in the rule's words, and its fix first
    assert (err.value.hint or "").splitlines()[0] == f"for gfx1201: {rule.fix}"
    with pytest.raises(NothingFitsError):  # for the target's CUDA (what run/plan select): the same GPU
        resolve.resolved(run_context((), settings), os_name="linux", cuda=13)


def test_amds_rocm_64_on_the_same_gpu_is_not_refused(host: Path) -> None:
    _gpus(host, GFX1201)
    _amd_rocm(host, "6.4.1")
    settings = Settings(cache_dir=host.parent / "cache")
    ctx = resolve.resolved(run_context((), settings), os_name="linux", cuda=13)
    source = resolve.release_for(ctx, download=False)
    assert source.ref.id == "upstream-v6"


def _manifest_with(tmp_path: Path, *, rule: dict[str, object] | None = None, driver_v3: bool = False) -> Path:
    """The packaged manifest with a rule added, or upstream-v3's Linux build needing only the driver (a
    build a broken rule leaves in: what makes the selection pick another release rather than refuse)."""
    data = json.loads(default_manifest_path().read_text())
    if rule is not None:
        data["gpu_hip_rules"].append(rule)
    if driver_v3:
        v3 = next(r for r in data["releases"] if r["id"] == "upstream-v3")
        linux = next(a for a in v3["assets"] if a["os"] == "linux")
        linux["hip"] = {"kind": "driver", "label": "the AMD driver's own runtime (test manifest)"}
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data))
    return path


def test_a_broken_rule_changes_what_the_run_selects(host: Path) -> None:
    _gpus(host, GFX1201)
    _debian_hip_64(host)
    settings = Settings(cache_dir=host.parent / "cache", manifest=_manifest_with(host.parent, driver_v3=True))
    def chosen() -> str | None:
        ctx = resolve.resolved(run_context((), settings), os_name="linux", cuda=None)
        return resolve.release_for(ctx, download=False).ref.id

    assert chosen() == "upstream-v3"
    (host / "sys/class/kfd/kfd/topology/nodes/1/properties").write_text(
        "simd_count 128\nsimd_per_cu 2\ngfx_target_version 110000\n")  # an RDNA3 GPU: no rule for it
    assert chosen() == "upstream-v6"


TEST_RULE = {
    "gfx": ["gfx1100"], "os": "linux", "broken": ["6.4"], "label": "RDNA3 on ROCm 6.4 hangs (test rule)",
    "fix": "install ROCm 6.3 or 7.1",
    "source": {"kind": "unverified", "sources": [], "note": "a rule only this test's manifest carries"},
}


def test_doctor_judges_by_the_manifest_given(host: Path) -> None:
    _gpus(host, GFX1100)
    _amd_rocm(host, "6.4.1")

    def doctor(manifest: Path | None) -> object:
        settings = Settings(cache_dir=host.parent / "cache", manifest=manifest)
        return run_doctor(DoctorOptions(root=host, env={}, platform="linux", machine="x86_64",
                                        home=Path("/home/user"), settings=settings))

    plain = doctor(None)
    assert plain.check("gpu_hip").status is Status.OK  # type: ignore[attr-defined]
    assert plain.check("release").status is Status.OK  # type: ignore[attr-defined]
    ruled = doctor(_manifest_with(host.parent, rule=TEST_RULE))
    gpu_hip = ruled.check("gpu_hip")  # type: ignore[attr-defined]
    assert gpu_hip.status is Status.FAIL
    (rule,) = gpu_hip.details["rules"]  # the test manifest's rule, as given, source and fix
    assert rule == {**TEST_RULE, "min": None, "max": None, "hip_from": None, "defaults": [],
                    "defaults_why": "", "source": {**TEST_RULE["source"], "independent": None}}
    assert gpu_hip.fix == "Install ROCm 6.3 or 7.1."
    release = ruled.check("release")  # type: ignore[attr-defined]
    assert release.status is Status.FAIL  # the run refused, for the same rule, in its words
    assert GpuHipRule.from_dict(rule).reason("gfx1100", "6.4") in release.message
