"""The doctor's report is a frozen record built once, and ``not_applicable`` is a status of its own:
shown in the text and the JSON, never a failure and never a pass (with or without ``--strict``),
recorded as neither."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.golden import assert_golden
from zluda_runner.cli import main_group
from zluda_runner.core.exitcodes import CHECK_FAILED, OK
from zluda_runner.doctor import Check, DoctorOptions, DoctorReport, Status, run_doctor
from zluda_runner.doctor.run import exit_code
from zluda_runner.host.facts import HostFacts
from zluda_runner.report.doctor_view import render_text

HIPSDK = ("hip_sdks", "hip_runtime_mix", "sdk_rocblas")
NA = Check("hip_sdks", Status.NOT_APPLICABLE, "Windows HIP SDK check: not applicable on linux")
WARN = Check("miopen", Status.WARN, "MIOpen not found", "install MIOpen")
FAIL = Check("driver", Status.FAIL, "amdgpu is not loaded", "modprobe amdgpu")
GOOD = Check("platform", Status.OK, "Linux x86_64")


def _linux(root: Path, *, strict: bool = False) -> DoctorReport:
    return run_doctor(DoctorOptions(root=root, env={}, platform="linux", machine="x86_64",
                                    home=Path("/home/u"), strict=strict))


@pytest.mark.parametrize(("checks", "loose", "strict"), [
    ((NA,), OK, OK),  # not applicable alone: nothing to fix, even under strict
    ((GOOD, NA), OK, OK),
    ((NA, WARN), OK, CHECK_FAILED),  # the warning decides under strict, not the not_applicable
    ((NA, FAIL), CHECK_FAILED, CHECK_FAILED),
])
def test_not_applicable_counts_neither_way(checks: tuple[Check, ...], loose: int, strict: int) -> None:
    assert (exit_code(checks), exit_code(checks, strict=True)) == (loose, strict)


def test_linux_report_shows_the_windows_checks_not_applicable(tmp_path: Path) -> None:
    report = _linux(tmp_path)
    assert [report.check(c).status for c in HIPSDK] == [Status.NOT_APPLICABLE] * 3
    assert report.count(Status.NOT_APPLICABLE) == 3
    # the text view of this bare linux root, n/a lines and totals included: golden doctor-empty-root
    rows = {row.item: row for row in report.result_rows().rows}
    assert [(rows[c].status, rows[c].ok) for c in HIPSDK] == [("not_applicable", None)] * 3
    # the rest of this bare tree fails (no GPU, no driver): strict changes nothing about the n/a checks
    assert report.exit_code == CHECK_FAILED == _linux(tmp_path, strict=True).exit_code


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the command doctors this platform")
def test_json_says_not_applicable(tmp_path: Path) -> None:
    result = CliRunner().invoke(main_group, ["doctor", "--root", str(tmp_path), "--json"])
    data = json.loads(result.output)
    statuses = {c["id"]: c["status"] for c in data["checks"]}
    assert [statuses[c] for c in HIPSDK] == ["not_applicable"] * 3
    assert isinstance(data["checks"], list) and isinstance(data["skipped"], list)  # tuples, as lists
    assert not any(s.startswith(HIPSDK) for s in data["skipped"])


def test_the_report_is_frozen_and_varied_by_replace(tmp_path: Path) -> None:
    report = _linux(tmp_path)
    assert isinstance(report.checks, tuple) and isinstance(report.skipped, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.exit_code = OK  # type: ignore[misc]
    quiet = dataclasses.replace(report, checks=(GOOD, NA), exit_code=exit_code((GOOD, NA)))
    assert quiet.exit_code == OK and report.exit_code == CHECK_FAILED
    back = DoctorReport.from_json(quiet.to_json())
    assert back.checks == (GOOD, NA) and back.check("hip_sdks").status is Status.NOT_APPLICABLE


def test_a_hand_made_report_renders_every_status() -> None:
    facts = HostFacts(os="linux", arch="x86_64", os_version="6.8", python="3.11")
    report = DoctorReport(facts, (GOOD, WARN, FAIL, NA), ("torch",), CHECK_FAILED)
    assert [report.count(s) for s in Status] == [1, 1, 1, 1]
    # one line per check with its mark, a fix under the warning and the failure only, the totals
    assert_golden("doctor-every-status", render_text(report, width=None))
