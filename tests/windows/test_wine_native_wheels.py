"""Native ROCm as the alternative to ZLUDA (issue 29) on the official Windows CPython under Wine: ``releases``
and ``doctor`` give the manifest's one answer (:func:`~zluda_runner.release.native.native_wheels`) in their
``--json`` and say it in one line where AMD publishes wheels for the GPU."""

from __future__ import annotations

import json
from pathlib import Path

from tests.windows.winpy import WinPython
from zluda_runner.core.wording import worded_for
from zluda_runner.release.manifest import load_manifest
from zluda_runner.release.native import native_wheels


def test_releases_rdna2_on_hip_sdk_7_no_zluda_but_native_wheels(winpy: WinPython) -> None:
    """An RX 6700 XT with HIP SDK 7.1: the RDNA2 rule keeps every ZLUDA release out (exit 3), and AMD's
    native wheels (TheRock, release-ready on Windows) are the way: the JSON's answer is the manifest's, the
    text view carries its line."""
    argv = ["releases", "--os", "windows", "--hip", "7.1", "--cuda", "11", "--gpu", "gfx1031"]
    out = winpy.zluda_run(*argv, "--json")
    assert out.returncode == 3 and "Traceback" not in out.stderr, out.stderr
    got = json.loads(out.stdout)["native_wheels"]
    want = native_wheels(load_manifest(), "gfx1031", "windows")
    assert want is not None and want.available is True
    with worded_for("command line"):
        assert got == json.loads(json.dumps(want.to_dict()))  # the same decision, the same words
    text = winpy.zluda_run(*argv)
    assert text.returncode == 3 and "Traceback" not in text.stderr, text.stderr
    lines = [line for line in text.stdout.splitlines() if line.startswith(got["line"].split(" (")[0])]
    assert lines == [got["line"]]  # piped: unfolded, once


DOCTOR = r"""
import json, sys
from pathlib import Path
from zluda_runner.doctor import DoctorOptions, run_doctor
from zluda_runner.host.hip import HipDevice, HipInfo
root = Path(sys.argv[1])
sdk = root / "Program Files" / "AMD" / "ROCm" / "6.4" / "bin"
sdk.mkdir(parents=True)
(sdk / "amdhip64_6.dll").write_bytes(b"")
info = HipInfo(library="amdhip64_6.dll", runtime_version=None,
               devices=[HipDevice(0, "AMD Radeon RX 7800 XT", "gfx1101", "gfx1101", 16 << 30)])
report = run_doctor(DoctorOptions(root=root, env={}, platform="win32", machine="AMD64",
                                  home=Path("C:/Users/u"), hip_query=lambda: info))
check = report.check("native_rocm")
print(json.dumps({"report": json.loads(report.to_json()), "check": check.to_dict() if check else None}))
"""


def test_doctor_says_it_for_an_rx_7800_under_windows(winpy: WinPython, tmp_path: Path) -> None:
    """The doctor's library call in the Windows CPython, the GPU given as the HIP runtime would report it
    (gfx1101) in a fake HIP SDK 6.4 tree: the native_rocm check's one line and the report's native_wheels."""
    out = winpy.run(["-c", DOCTOR, winpy.winpath(tmp_path)])
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    doc = json.loads(out.stdout)
    want = native_wheels(load_manifest(), "gfx1101", "windows")
    assert want is not None and want.available is True
    assert doc["report"]["native_wheels"] == json.loads(json.dumps(want.to_dict()))
    check = doc["check"]
    assert (check["status"], check["message"]) == ("ok", want.line())
    assert "\n" not in check["message"]


def test_doctor_on_a_bare_windows_host_answers_nothing(winpy: WinPython) -> None:
    """No GPU seen (Wine has no AMD adapter): the field is there, null, and no native_rocm check."""
    out = winpy.zluda_run("--json", "doctor")
    assert "Traceback" not in out.stderr, out.stderr
    doc = json.loads(out.stdout)
    assert "native_wheels" in doc and doc["native_wheels"] is None
    assert not [c for c in doc["checks"] if c["id"] == "native_rocm"]
