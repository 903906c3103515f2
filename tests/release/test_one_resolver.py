"""One release resolver (issue 27, point 2): ``run``, ``fetch`` without VERSION, ``releases`` and every doctor
check that names a release judge the release the run would take, for the host's HIP and the target torch's
CUDA. Fake hosts only: Debian 12 with HIP 5.2 (tests/commands/test_first_contact.py), a Windows tree with
HIP SDK 6.4 (tests/host/test_hipsdk.py); a CUDA 13 torch is a ``torch/version.py`` on ``PYTHONPATH``."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.commands.test_first_contact import host as host
from tests.commands.test_first_contact import zr
from tests.golden import assert_golden
from tests.host.test_hipsdk import _sdk
from tests.httpserve import serving
from tests.inspection.conftest import write_version_py
from zluda_runner.core.exitcodes import CHECK_FAILED
from zluda_runner.core.settings import Settings
from zluda_runner.doctor import DoctorOptions, Status, run_doctor
from zluda_runner.doctor.model import Check


@pytest.fixture
def cu130(host: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The HIP 5.2 host whose python has PyPI's torch for CUDA 13."""
    write_version_py(tmp_path / "site" / "torch", version="2.14.1+cu130", cuda="13.0", hip=None)
    return {**host, "PYTHONPATH": str(tmp_path / "site")}


def test_a_route_fits_only_what_is_selected_for_that_hip_and_this_torch(cu130: dict[str, str]) -> None:
    proc = zr(cu130, sys.executable, "-c", "print('never')")
    assert proc.returncode == CHECK_FAILED and "never" not in proc.stdout
    # the host's HIP and torch's CUDA 13 first; in the hint each way to a HIP with what fits there for this
    # torch (on 7859508: "fits upstream-v3, fork-rel.11cc584", releases that serve no CUDA 13 torch)
    assert_golden("release-route-hip52-cu130", proc.stderr)
    listed = json.loads(zr(cu130, "--json", "releases", "--hip", "5.7").stdout)  # what releases says of it
    assert listed["constraints"]["cuda"] == 13 and listed["selected"] is None


@contextlib.contextmanager
def counting_server() -> Iterator[tuple[str, list[str]]]:
    """A mirror on 127.0.0.1 that counts the requests it gets (and answers each 404)."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_error(404)

    with serving(Handler) as base:
        yield base, seen


def test_fetch_without_version_resolves_as_run_and_downloads_nothing_when_nothing_fits(
        cu130: dict[str, str]) -> None:
    with counting_server() as (url, seen):
        env = {**cu130, "ZLUDA_RUNNER_MIRROR": url}
        proc = zr(env, "fetch")
        run = zr(env, sys.executable, "-c", "print('never')")
        as_json = json.loads(zr(env, "--json", "fetch").stdout)
    assert proc.returncode == CHECK_FAILED, proc.stderr  # on 7859508: upstream-v6 was downloaded (exit 1)
    assert seen == []  # judged before any download
    assert proc.stderr.splitlines()[0] == run.stderr.splitlines()[1]  # the run's own words
    assert (as_json["kind"], as_json["exit_code"]) == ("nothing-fits", CHECK_FAILED)
    assert f"error: {as_json['error']}" == proc.stderr.split("\nhint: ")[0]  # the same words


def _cu118(opts: object) -> Check:
    return Check("torch", Status.OK, "torch 2.7.1+cu118", details={"cuda": "11.8"})


def test_every_windows_doctor_check_that_names_a_release_judges_the_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zluda_runner.doctor.run as doctor_run

    monkeypatch.setattr(doctor_run, "check_torch", _cu118)  # a cu118 torch, as the torch check reads it
    root = tmp_path / "root"
    settings = Settings(cache_dir=tmp_path / "cache")

    def doctor(env: dict[str, str]) -> object:
        return run_doctor(DoctorOptions(root=root, env=env, platform="win32", machine="AMD64",
                                        home=Path("/Users/u"), check_torch=True, settings=settings))

    report = doctor({"HIP_PATH": _sdk(root, "6.4")})
    release, mix = report.check("release"), report.check("hip_runtime_mix")  # type: ignore[attr-defined]
    assert release.details["release"] == "fork-3.9.5"
    assert "fork-3.9.5" in mix.details["release_source"]  # on 7859508: upstream-v6's HIP bounds
    bare = tmp_path / "bare"
    root = bare
    bare.mkdir()
    report = doctor({})
    chosen = report.check("release").details  # type: ignore[attr-defined]
    rocm = report.check("rocm")  # type: ignore[attr-defined]
    assert chosen["release"] == "fork-3.9.6" and chosen["asset"]["hip"]["min"] == "7.1"
    assert "7.1" in rocm.fix and "fork-3.9.6" in rocm.fix  # on 7859508: "6.x ... 5.7"
