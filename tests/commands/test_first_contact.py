"""First contact on a Debian 12 host with the distribution's libamdhip64-5 (HIP 5.2): issue 20's newcomer
items 1, 2, 4, 5, 6, 8, 9 and adversarial item 5. The host is a fake tree (ZLUDA_RUNNER_ROOT): the files
Debian's libamdhip64-5 (5.2.3-8) ships, as `dpkg -c` lists them, and Debian 12's /etc/os-release; nothing
is read from this machine's own HIP, GPUs or /dev/kfd. Through the real console entry point in a subprocess.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.golden import assert_golden
from tests.httpserve import serving

DEBIAN_12_OS_RELEASE = (
    'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
    'VERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n'
)


def debian_hip52_root(root: Path) -> Path:
    lib = root / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libamdhip64.so.5.2.21153").write_bytes(b"\x7fELF")
    os.symlink("libamdhip64.so.5.2.21153", lib / "libamdhip64.so.5")
    (root / "etc").mkdir()
    (root / "etc/os-release").write_text(DEBIAN_12_OS_RELEASE)
    return root


@pytest.fixture
def host(tmp_path: Path) -> dict[str, str]:
    """The environment of a zluda-run on the Debian 12 + HIP 5.2 host, with a private cache."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ZLUDA_RUNNER_") and k not in ("ROCM_PATH", "HIP_PATH")}
    env["ZLUDA_RUNNER_ROOT"] = str(debian_hip52_root(tmp_path / "root"))
    env["ZLUDA_RUNNER_CACHE"] = str(tmp_path / "cache")
    env["COLUMNS"] = "200"
    return env


def zr(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zluda_runner", *args], env=env, cwd=cwd, text=True,
                          capture_output=True, timeout=300, stdin=subprocess.DEVNULL, check=False)


def manifest_doc(version: int, add_release: str | None = None) -> bytes:
    """The packaged manifest as a newer version; with ``add_release``, a copy of upstream v6 under that id."""
    from zluda_runner.release.manifest import default_manifest_path

    doc = json.loads(default_manifest_path().read_bytes())
    doc["manifest_version"] = version
    if add_release:
        v6 = json.loads(json.dumps(next(r for r in doc["releases"] if r["id"] == "upstream-v6")))
        v6.update(id=add_release, version="99", tag="v99")
        for asset in v6["assets"]:
            asset["url"] = asset["url"].replace("/download/v6/", "/download/v99/")
        doc["releases"].insert(0, v6)
    return json.dumps(doc).encode()


@contextlib.contextmanager
def serve_manifest(body: bytes) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 serving ``body`` at /m.json."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            found = self.path == "/m.json"
            self.send_response(200 if found else 404)
            self.send_header("Content-Length", str(len(body) if found else 0))
            self.end_headers()
            self.wfile.write(body if found else b"")

    with serving(Handler) as base:
        yield f"{base}/m.json"


# --------------------------------------------------------------------------- item 1


def test_hip52_host_gets_the_host_check_first_and_a_short_message(host: dict[str, str]) -> None:
    proc = zr(host, sys.executable, "-c", "print('never')")
    assert proc.returncode == 3, proc.stderr
    assert "never" not in proc.stdout
    lines = proc.stderr.splitlines()
    # the host check first; the HIP found and where; what each release for this OS needs; in the hint the
    # ways to a HIP that fits (each "fits X" what the resolver selects there), --zluda-dir, the doctor
    assert_golden("first-contact-hip52", proc.stderr)
    assert max(len(line) for line in lines) < 200 and len(proc.stderr) < 1400  # not one 1,419-char line
    assert "[publisher" not in proc.stderr  # the long list with its sources stays behind `releases`


def test_a_requested_release_that_does_not_fit_says_how_to_get_there(host: dict[str, str]) -> None:
    proc = zr(host, "--release", "upstream-v6", "plan", "--", "sh", "-c", "true")
    assert proc.returncode == 3, proc.stderr
    hint = proc.stderr.split("hint: ", 1)[1]
    assert "drop --release" not in hint  # no circle: the way out is a HIP that fits
    assert_golden("first-contact-release-does-not-fit", proc.stderr)
    as_json = json.loads(zr(host, "--json", "--release", "upstream-v6", "plan", "--", "true").stdout)
    assert (as_json["kind"], as_json["exit_code"]) == ("nothing-fits", 3)


def test_archive_is_looked_at_before_the_release_check(host: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "zluda-linux-3fe12063.tar.gz"
    proc = zr(host, "--json", "--archive", str(missing), "sh", "-c", "true")
    error = json.loads(proc.stdout)
    assert (proc.returncode, error["kind"]) == (1, "fetch") and str(missing) in error["error"]
    missing.write_bytes(b"not really")  # named as upstream v6's asset: that release is the one judged
    proc = zr(host, "--json", "--archive", str(missing), "sh", "-c", "true")
    error = json.loads(proc.stdout)
    assert (proc.returncode, error["kind"]) == (3, "nothing-fits") and "upstream-v6" in error["error"]


def test_readme_troubleshooting_has_the_row_for_this_message() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Troubleshooting", 1)[1].split("\n## ", 1)[0]
    row = next((line for line in section.splitlines() if "no ZLUDA release fits this host" in line), "")
    assert "libamdhip64-5" in row and "AMD's repository" in row and "--zluda-dir" in row, row


# --------------------------------------------------------------------------- item 2


def test_nothing_fits_is_exit_3_on_every_path(host: dict[str, str]) -> None:
    for args in (["run", "--", "sh", "-c", "true"], ["sh", "-c", "true"], ["plan", "--", "sh", "-c", "true"],
                 ["warmup", "--", "sh", "-c", "true"], ["--verify-load", "--", "sh", "-c", "true"],
                 ["fetch", "--os", "linux", "--hip", "5.2"], ["releases", "--os", "linux", "--hip", "5.2"]):
        proc = zr(host, *args)
        assert proc.returncode == 3, (args, proc.stderr[-600:])
        data = json.loads(zr(host, "--json", *args).stdout) if args[0] != "releases" else None
        if data is not None:
            assert data["exit_code"] == 3 and "fits" in data["error"], (args, data)


def test_one_nothing_fits_error_class() -> None:
    from zluda_runner.release.manifest import load_manifest
    from zluda_runner.release.selection import NothingFitsError, Resolution, SelectionError, select_asset

    sel = select_asset(load_manifest(), os="linux", hip="5.2", cuda=12)
    with pytest.raises(NothingFitsError) as err:
        Resolution(load_manifest(), sel).require()
    assert isinstance(err.value, SelectionError) and err.value.exit_code == 3


# --------------------------------------------------------------------------- item 4


def test_bare_releases_selects_for_this_host_and_its_torch(host: dict[str, str]) -> None:
    proc = zr(host, "releases", "--python", sys.executable)
    assert proc.returncode == 3, proc.stdout[-500:]
    assert proc.stdout.startswith("wanted: os=linux arch=x86_64 hip=5.2")
    data = json.loads(zr(host, "--json", "releases", "--python", sys.executable).stdout)
    assert data["selected"] is None
    [cpu_build] = data["warnings"]  # a CPU build of torch: said so, and how to name a CUDA
    assert sys.executable in cpu_build and "--cuda N" in cpu_build
    full = zr(host, "releases", "--all")
    assert full.returncode == 0 and "releases, " in full.stdout and "assets" in full.stdout


def test_bare_releases_reads_the_cuda_of_the_target_torch(host: dict[str, str], tmp_path: Path) -> None:
    from tests.inspection.conftest import write_version_py

    site = tmp_path / "site"
    write_version_py(site / "torch", version="2.14.1+cu130", cuda="13.0", hip=None)
    env = {**host, "PYTHONPATH": str(site)}
    proc = zr(env, "releases", "--json")
    data = json.loads(proc.stdout)
    assert data["constraints"]["cuda"] == 13 and data["constraints"]["hip"] == "5.2"
    assert proc.returncode == 3 and data["selected"] is None


# --------------------------------------------------------------------------- item 5


def test_doctor_and_run_give_one_verdict(host: dict[str, str], tmp_path: Path) -> None:
    doctor = json.loads(zr(host, "--json", "doctor").stdout)
    release = next(c for c in doctor["checks"] if c["id"] == "release")
    run = json.loads(zr(host, "--json", "plan", "--", "sh", "-c", "true").stdout)
    assert release["status"] == "fail" and run["exit_code"] == 3
    assert release["message"] == run["error"]
    # the same ways, less the run's pointer to the doctor (issue 29: inside the doctor it pointed to itself)
    ways, doctor_ways = run["hint"].split("\n  "), release["fix"].split("\n  ")
    assert doctor_ways[:-1] == ways[:-1] and "`zluda-run doctor`" in ways[-1]
    assert "`zluda-run doctor`" not in doctor_ways[-1] and doctor_ways[-1] in ways[-1]
    verdict = f"{release['message']}\nfix: {release['fix']}\n"  # Linux builds only: no Windows one named
    assert_golden("first-contact-doctor-release-verdict", verdict, tmp=tmp_path)


# --------------------------------------------------------------------------- item 6


def test_strict_is_a_global_option(host: dict[str, str], tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    release = tmp_path / "zluda"
    release.mkdir()
    touch = ["sh", "-c", f"touch {marker}"]
    for args in (["--strict", *touch], ["--strict", "--", *touch], ["run", "--strict", "--", *touch]):
        proc = zr(host, "--json", "--zluda-dir", str(release), *args)
        assert proc.returncode == 3, (args, proc.stderr)
        error = json.loads(proc.stdout)
        assert error["kind"] == "check-failed" and "/dev/kfd" in error["error"]  # the host check's finding
        assert not marker.exists()


# --------------------------------------------------------------------------- item 8


def test_probe_exit_code_says_could_not_run() -> None:
    from zluda_runner.probe.model import CaseResult, LoadResult, ProbeReport

    assert ProbeReport(kind="torch", load=LoadResult("unavailable", "CUDA is not available")).could_not_run
    failed = ProbeReport(kind="torch", load=LoadResult("pass"), cases=[CaseResult("a", "x", "a", "mismatch")])
    assert failed.has_problems and not failed.could_not_run


def test_probe_torch_without_a_device_exits_1(host: dict[str, str]) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this torch has a CUDA device")
    proc = zr(host, "--no-record", "--python", sys.executable, "probe", "--torch", "--native", "--quick")
    assert proc.returncode == 1, proc.stdout[-800:] + proc.stderr[-800:]


# --------------------------------------------------------------------------- item 9


def test_help_texts_show_no_rst_markup() -> None:
    import click

    from zluda_runner.cli import main_group
    from zluda_runner.commands import COMMAND_TABLE

    ctx = click.Context(main_group)
    assert "``" not in main_group.get_help(ctx)
    for name in ("run", "plan", "releases", "fetch", "doctor", "warmup", "ab", "probe", "manifest"):
        assert name in COMMAND_TABLE
        cmd = main_group.get_command(ctx, name)
        assert cmd is not None
        assert "``" not in cmd.get_help(click.Context(cmd, info_name=name)), name


def test_ab_with_a_b_python_that_does_not_exist_runs_nothing(host: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    marker = tmp_path / "ran"
    script.write_text(f"open({str(marker)!r}, 'a').write('x')\n")
    missing = tmp_path / "no-such-python"
    proc = zr(host, "--json", "ab", "--b-python", str(missing), "--", str(script))
    error = json.loads(proc.stdout)
    assert (proc.returncode, error["kind"]) == (1, "host") and str(missing) in error["error"]
    assert not marker.exists()


def test_manifest_update_without_url_reuses_the_last_one(host: dict[str, str], tmp_path: Path) -> None:
    with serve_manifest(manifest_doc(99)) as url:
        first = zr(host, "manifest", "update", url)
        assert first.returncode == 0, first.stderr
        again = zr(host, "--json", "manifest", "update")  # as the README shows it: no URL
        assert again.returncode == 0, again.stderr
        result = json.loads(again.stdout)
        got = (result["url"], result["replaced"], result["manifest_version"], result["previous_version"])
        assert got == (url, False, 99, 99), result  # the last update's URL, read again: already that version


# --------------------------------------------------------------------------- adversarial 5


def test_every_path_reads_the_updated_manifest(host: dict[str, str], tmp_path: Path) -> None:
    """After `manifest update` adds a release, releases, fetch, cache path, plan and run all see it."""
    env = {**host}
    env.pop("ZLUDA_RUNNER_ROOT")
    rocm = tmp_path / "hostroot"
    (rocm / "opt/rocm/.info").mkdir(parents=True)
    (rocm / "opt/rocm/.info/version").write_text("6.2.0\n")
    env["ZLUDA_RUNNER_ROOT"] = str(rocm)
    with serve_manifest(manifest_doc(99, add_release="upstream-v99")) as url:
        update = zr(env, "manifest", "update", url)
        assert update.returncode == 0, update.stderr
    listed = zr(env, "releases", "--all")
    assert "upstream-v99" in listed.stdout
    mirror = {**env, "ZLUDA_RUNNER_MIRROR": (tmp_path / "empty-mirror").as_uri()}
    for args, text in ((["fetch", "upstream-v99", "--os", "linux"], "download/v99/"),
                       (["cache", "path", "upstream-v99"], "Release upstream-v99 is not in the cache"),
                       (["cache", "clean", "upstream-v99"], ""),
                       (["--release", "upstream-v99", "plan", "--", "sh", "-c", "true"], "upstream-v99"),
                       (["--release", "upstream-v99", "sh", "-c", "true"], "download/v99/")):
        proc = zr(mirror, *args)
        assert text in proc.stdout + proc.stderr, (args, proc.stdout[-300:], proc.stderr[-600:])
        said = zr(mirror, "--json", *args)  # an error, if any, is not the manifest's (no such release)
        assert said.returncode == 0 or json.loads(said.stdout)["kind"] != "manifest", (args, said.stdout)


def test_an_empty_hip_path_variable_is_no_hip_sdk(tmp_path: Path) -> None:
    """`HIP_PATH_64=` (set, empty) names no folder: the run's HIP finder must not take the current
    folder for a HIP SDK 6.4 (it did: --strict then let a host without HIP through)."""
    from zluda_runner.host.quick import hip_found, quick_facts

    env = {"HIP_PATH": "", "HIP_PATH_64": "", "ProgramFiles": "C:\\Program Files"}
    assert hip_found(env, tmp_path, "win32").version is None
    assert quick_facts(env, tmp_path, "win32").problems == ["no AMD HIP SDK found"]
