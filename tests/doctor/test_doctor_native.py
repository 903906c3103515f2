"""doctor's ``native_rocm`` check and the report's ``native_wheels`` (issue 29): where the manifest's data
says the run's GPU has AMD's native ROCm PyTorch wheels on this OS, one line with the command that
compares them with ZLUDA on the user's workload -- the same answer ``releases`` gives (one decision,
:func:`~zluda_runner.release.native.native_wheels`). Fake host trees: nothing of this machine is read."""

from __future__ import annotations

import json
from pathlib import Path

from tests.doctor.test_doctor import _doctor, rocm62_tree
from tests.doctor.test_doctor_gpu_rules import _windows
from zluda_runner.doctor import Status
from zluda_runner.release.manifest import load_manifest
from zluda_runner.release.native import native_wheels


def test_an_rx_7900_on_linux_is_told_of_the_native_wheels(tmp_path: Path) -> None:
    rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    report = _doctor(tmp_path)
    want = native_wheels(load_manifest(), "gfx1100", "linux")
    assert want is not None and want.available
    assert report.native_wheels == want  # the typed answer, as releases gives it
    check = report.check("native_rocm")
    assert check is not None and check.status is Status.OK
    assert check.message == want.line() and "\n" not in check.message  # one line
    assert check.details["install"] == want.install
    assert json.loads(report.to_json())["native_wheels"]["available"] is True  # the --json field


def test_windows_rdna3_and_an_unsourced_gpu(tmp_path: Path) -> None:
    """gfx1101 on Windows: AMD's wheels (release-ready); gfx803 (Polaris): no source found -- no line, and
    the report's answer says it is not known (an unverified fact with its note)."""
    yes = _windows(tmp_path / "rdna3", "6.4", "gfx1101", "AMD Radeon RX 7800 XT")
    assert yes.native_wheels is not None and yes.native_wheels.available is True
    assert yes.native_wheels.support == "release-ready"
    assert yes.check("native_rocm") is not None
    no = _windows(tmp_path / "polaris", "5.7", "gfx803", "Radeon RX 580 Series")
    assert no.native_wheels is not None and no.native_wheels.available is None
    assert no.native_wheels.source.kind == "unverified" and no.native_wheels.source.note
    assert no.check("native_rocm") is None


def test_no_gpu_no_answer(tmp_path: Path) -> None:
    report = _doctor(tmp_path)  # an empty host: no GPU
    assert report.native_wheels is None and report.check("native_rocm") is None
    assert json.loads(report.to_json())["native_wheels"] is None
