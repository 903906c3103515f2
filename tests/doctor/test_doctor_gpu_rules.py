"""doctor's ``gpu_hip`` verdict: the manifest's GPU x HIP rules (issue 22) for the GPU the run uses and the
host's HIP, in fake host trees (nothing of this machine is read). Each rule turns the verdict to a failure
with its words, its fix and its source; the same GPU on a HIP the rule accepts passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doctor.test_doctor import _kfd_node, _write
from tests.golden import assert_golden
from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.doctor import DoctorOptions, Status, run_doctor
from zluda_runner.host.hip import HipDevice, HipInfo

# gfx_target_version in the KFD topology: major*10000 + minor*100 + stepping (kernel
# Documentation/gpu/amdgpu and drivers/gpu/drm/amd/amdkfd/kfd_topology.c: "gfx_target_version")
GFX1201 = 120001


def _linux_gpu(root: Path, target_version: int) -> None:
    _write(root, "sys/module/amdgpu/version", "6.8.5\n")
    _write(root, "dev/kfd")
    _kfd_node(root, 0, 0, simd=0, cpu_cores=16)
    _kfd_node(root, 1, target_version, simd=128, vram=16 << 30)


def _debian_rocm_64(root: Path) -> None:
    """A distribution's packaged HIP 6.4 in the multiarch folder, named as Debian names its libamdhip64
    (libamdhip64-5 5.2.3 ships libamdhip64.so.5.2.21153 + the libamdhip64.so.5 link; the patch number
    here is illustrative: only MAJOR.MINOR is read)."""
    lib = root / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libamdhip64.so.6.4.43484").touch()
    (lib / "libamdhip64.so.6").symlink_to("libamdhip64.so.6.4.43484")


def _linux(root: Path) -> object:
    return run_doctor(DoctorOptions(root=root, env={}, platform="linux", machine="x86_64",
                                    home=Path("/home/user")))


def test_debians_rocm_64_fails_an_rdna4_gpu_and_amds_rocm_64_does_not(tmp_path: Path) -> None:
    debian = tmp_path / "debian"
    _linux_gpu(debian, GFX1201)
    _debian_rocm_64(debian)
    report = _linux(debian)
    check = report.check("gpu_hip")
    assert report.facts.rocm is not None and report.facts.rocm.kind == "distribution"
    assert check.status is Status.FAIL and report.exit_code == CHECK_FAILED
    assert {k: check.details[k] for k in ("gfx", "hip", "hip_from")} == {
        "gfx": "gfx1201", "hip": "6.4", "hip_from": "distribution"}
    (rule,) = check.details["rules"]  # the rule broken, as the manifest has it
    assert (rule["os"], rule["broken"], rule["hip_from"]) == ("linux", ["6.4"], "distribution")
    assert check.fix == f"{rule['fix'][:1].upper()}{rule['fix'][1:]}."  # the rule's own fix
    assert "https://rocm.docs.amd.com/projects/install-on-linux/" in check.fix
    # the verdict in the rule's words, its fix and its source
    assert_golden("doctor-gpu-hip-debian-rocm64", f"{check.message}\nfix: {check.fix}\n")

    amd = tmp_path / "amd"
    _linux_gpu(amd, GFX1201)
    _write(amd, "opt/rocm/.info/version", "6.4.1-1\n")
    ok = _linux(amd).check("gpu_hip")
    assert ok.status is Status.OK and ok.details["hip_from"] == "rocm"
    assert (ok.details["rules"], ok.details["held"]) == ([], 3)  # gfx1201's rules, none broken


def _windows(root: Path, sdk: str, gfx: str, name: str) -> object:
    _write(root, f"Program Files/AMD/ROCm/{sdk}/bin/amdhip64_{sdk[0]}.dll")
    info = HipInfo(library=f"amdhip64_{sdk[0]}.dll", runtime_version=None,
                   devices=[HipDevice(0, name, gfx, gfx, 8 << 30)])
    return run_doctor(DoctorOptions(root=root, env={}, platform="win32", machine="AMD64",
                                    home=Path("/Users/u"), hip_query=lambda: info))


@pytest.mark.parametrize(("gfx", "name", "bad", "good", "needs", "fix"), [
    ("gfx1031", "AMD Radeon RX 6700 XT", "7.1", "6.4", (None, ["7"]),
     "Install HIP SDK 6.2.4 or 6.4.2 (and point HIP_PATH at it)."),
    ("gfx1201", "AMD Radeon RX 9070 XT", "6.2", "6.4", ("6.4", []), "Install HIP SDK 6.4.2 or newer."),
    ("gfx1150", "AMD Radeon 890M", "7.1", "7.2", ("7.2", []), "Install HIP SDK 7.2 or newer."),
])
def test_windows_gpu_hip_rules_change_the_verdict(tmp_path: Path, gfx: str, name: str, bad: str, good: str,
                                                  needs: tuple[str | None, list[str]], fix: str) -> None:
    broken = _windows(tmp_path / "bad", bad, gfx, name).check("gpu_hip")
    assert broken.status is Status.FAIL, broken.message
    assert {k: broken.details[k] for k in ("gfx", "hip", "hip_from")} == {"gfx": gfx, "hip": bad,
                                                                          "hip_from": "hip-sdk"}
    (rule,) = broken.details["rules"]
    assert (rule["os"], rule["min"], rule["broken"]) == ("windows", *needs) and gfx in rule["gfx"]
    assert broken.fix == fix  # what to install
    assert "[" in broken.message  # the source is cited
    fine = _windows(tmp_path / "good", good, gfx, name).check("gpu_hip")
    assert fine.status is Status.OK, fine.message


def test_a_users_value_that_hides_every_gpu_fails_device_order_naming_it(tmp_path: Path) -> None:
    """HIP_VISIBLE_DEVICES=-1 / abc hides every GPU (ROCm/clr rocdevice.cpp, Device::init: the list ends at
    its first invalid entry): the doctor says so, naming the variable and its value, and judges no GPU;
    a list cut short after a valid index judges that GPU and warns."""
    from tests.doctor.test_doctor import _doctor, rocm62_tree

    rocm62_tree(tmp_path, gfx_nodes=[(110000, 192, 24 << 30)], tensile_for=["gfx1100"])
    views = []
    for value in ("-1", "abc"):
        report = _doctor(tmp_path, env={"HIP_VISIBLE_DEVICES": value})
        order = report.check("device_order")
        assert order.status is Status.FAIL, order
        assert order.details == {"HIP_VISIBLE_DEVICES": value}
        assert f"HIP_VISIBLE_DEVICES={value!r}" in order.message
        assert "gpu_arch" in report.skipped  # no GPU to judge
        views.append(f"{value!r}: [{order.status.value}] {order.message}\nfix: {order.fix}")
    cut = _doctor(tmp_path, env={"HIP_VISIBLE_DEVICES": "0,abc"}).check("device_order")
    assert cut.status is Status.WARN and cut.details == {"used": 0, "visible": [0]}
    views.append(f"'0,abc': [{cut.status.value}] {cut.message}\nfix: {cut.fix}")
    # each names the variable and its value, why ROCm shows no GPU (or only GPU 0), and what to do
    assert_golden("doctor-device-order-hidden", "\n".join(views) + "\n")
