"""The public API end to end, through public names only (``import zluda_runner as zr``): choose, fetch
from a 127.0.0.1 mirror, plan, run a stand-in workload, place/restore a Windows torch/lib; errors are the
ZludaRunnerError family with hints worded for a Python caller (no command-line flags)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import zluda_runner as zr
from tests.api.conftest import snapshot
from zluda_runner.release.manifest import load_manifest

REPO = Path(__file__).resolve().parents[2]
BASE = "https://github.com/vosen/ZLUDA/releases/download"
CLI_FLAG = re.compile(r"(?<![\w-])--[a-z]")
HIPSDK = ("hip_sdks", "hip_runtime_mix", "sdk_rocblas")  # the doctor's Windows HIP SDK checks


def _caller_worded(exc: zr.ZludaRunnerError) -> None:
    for text in (exc.message, exc.hint or "", str(exc)):
        assert not CLI_FLAG.search(text), text
        assert "zluda-run " not in text, text


# --------------------------------------------------------------------------- the surface


def test_every_public_name_is_importable_and_documented() -> None:
    for name in zr.__all__:
        obj = getattr(zr, name)
        assert name == "__version__" or (obj.__doc__ or "").strip(), f"{name} has no docstring"
    assert isinstance(zr.__version__, str) and re.fullmatch(r"\d+\.\d+\.\d+.*", zr.__version__)


def test_one_table_of_public_names() -> None:
    """``zluda_runner._PUBLIC`` is the one table: ``__all__`` is its names, and the imports for type checkers
    say the same name -> module, each re-exported (``X as X``; ``__version__`` is declared)."""
    import ast

    tree = ast.parse((REPO / "zluda_runner" / "__init__.py").read_text(encoding="utf-8"))
    for_types = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    imported = {a.name: node.module for node in for_types.body if isinstance(node, ast.ImportFrom)
                for a in node.names if a.asname == a.name}
    assert imported == {n: m for n, m in zr._PUBLIC.items() if n != "__version__"}
    assert zr.__all__ == sorted(zr._PUBLIC)


def test_no_public_name_is_shadowed_by_a_subpackage() -> None:
    """``zluda_runner.plan`` is a subpackage: a function of that name would be replaced by the module the
    first time anything imports it. No public name may be the name of a module of the package."""
    modules = {p.stem if p.is_file() else p.name for p in (REPO / "zluda_runner").iterdir()
               if not p.name.startswith("_")}
    assert not set(zr.__all__) & modules
    import zluda_runner.plan.model  # noqa: F401  (what every launch imports)

    assert callable(zr.plan_command)


def test_options_are_one_frozen_typed_record() -> None:
    options = zr.Options(cache_dir=Path("/c"), force=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.force = False  # type: ignore[misc]
    assert dataclasses.replace(options, force=False).force is False
    fields = {f.name for f in dataclasses.fields(zr.Options)}
    assert fields == {"cache_dir", "zluda_dir", "release", "manifest", "python", "trust_on_first_use",
                      "archive", "force", "results_db", "record", "defaults", "monitor", "lock"}


def test_errors_are_the_library_family() -> None:
    for name in ("FetchError", "ChecksumError", "NothingFitsError", "FatalPlanError", "PlacementError",
                 "CommandNotFoundError", "ResultsStoreError", "TargetError"):
        assert issubclass(getattr(zr, name), zr.ZludaRunnerError), name
    assert issubclass(zr.ChecksumError, zr.FetchError) and zr.NothingFitsError.exit_code == 3


# --------------------------------------------------------------------------- choose, fetch


def test_choose_release_for_a_windows_host_with_reasons() -> None:
    choice = zr.choose_release(zr.Options(), os="windows", hip="6.4", cuda="cu118")
    assert (choice.release, choice.asset) == ("fork-3.9.5", "ZLUDA-windows-rocm6-amd64.zip")
    assert (choice.os, choice.hip, choice.hip_source, choice.cuda) == ("windows", "6.4", "given", 11)
    assert 11 in choice.serves and choice.needs == load_manifest().find(choice.release).asset(
        choice.asset).hip.describe()  # the asset's HIP requirement
    assert choice.rejected and all(r.reasons for r in choice.rejected)
    assert any(r.release == "fork-3.9.6" and not r.fits for r in choice.rejected)  # HIP 7 only


def test_nothing_fits_is_worded_for_the_caller() -> None:
    with pytest.raises(zr.NothingFitsError) as info:
        zr.choose_release(zr.Options(), os="windows", hip="5.2", cuda=11)
    assert info.value.exit_code == 3 and info.value.selection is not None
    _caller_worded(info.value)
    assert "Options(zluda_dir=...)" in (info.value.hint or "")
    assert "zluda_runner.list_releases()" in (info.value.hint or "")


@pytest.fixture
def mirrored(tmp_path: Path, kit, server, monkeypatch: pytest.MonkeyPatch) -> tuple[zr.Options, bytes, Any]:
    """A manifest with one Linux release (known hash), served by an HTTP server on 127.0.0.1 as the mirror."""
    payload = kit.tar_gz(kit.ZLUDA_LIKE)
    packaged = json.loads((REPO / "manifests" / "zluda-releases.json").read_text())
    release = next(r for r in packaged["releases"] if r["id"] == "upstream-v6")
    asset = next(a for a in release["assets"] if a["os"] == "linux")
    asset.update(name="zluda-linux-test.tar.gz", url=f"{BASE}/v6/zluda-linux-test.tar.gz",
                 sha256=kit.sha256(payload), size=len(payload))
    release["assets"] = [asset]
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({**packaged, "releases": [release]}))
    server.add("/m/vosen/ZLUDA/releases/download/v6/zluda-linux-test.tar.gz", payload)
    monkeypatch.setenv("ZLUDA_RUNNER_MIRROR", server.url("/m"))
    return zr.Options(manifest=manifest, cache_dir=tmp_path / "cache"), payload, server


def test_fetch_from_a_loopback_mirror_verified_and_cached(mirrored) -> None:
    options, _payload, server = mirrored
    fetched = zr.fetch(options, version="v6", os="linux")
    assert isinstance(fetched, zr.Fetched) and fetched.action == "downloaded"
    assert fetched.release == "upstream-v6" and fetched.path.name == "zluda"  # the archive_root
    assert (fetched.path / "libcublas.so.13").read_bytes() == b"fake cublas" * 50
    assert (fetched.path / "libcuda.so.1").read_bytes() == b"\x7fELF fake driver" * 100
    again = zr.fetch(options, version="upstream-v6", os="linux")
    assert (again.action, again.path) == ("cached", fetched.path)
    assert len(server.served("/m/vosen/ZLUDA/releases/download/v6/zluda-linux-test.tar.gz")) == 1
    assert zr.cached_release("v6", options) == (fetched.unpacked,)


def test_a_tampered_download_is_a_checksum_error(mirrored) -> None:
    options, payload, server = mirrored
    tampered = payload[:-1] + bytes([payload[-1] ^ 1])
    server.add("/m/vosen/ZLUDA/releases/download/v6/zluda-linux-test.tar.gz", tampered)
    with pytest.raises(zr.ChecksumError) as info:
        zr.fetch(options, version="v6", os="linux")
    _caller_worded(info.value)
    with pytest.raises(zr.CacheError) as missing:
        zr.cached_release("v6", options)
    _caller_worded(missing.value)
    assert "zluda_runner.fetch()" in (missing.value.hint or "")


# --------------------------------------------------------------------------- plan, launch, run


def test_plan_a_command_against_a_standin_release(linux_release: Path, cuda_app: Path,
                                                   tmp_path: Path) -> None:
    options = zr.Options(zluda_dir=linux_release, cache_dir=tmp_path / "cache")
    plan = zr.plan_command([str(cuda_app), "sgemm"], options)
    assert isinstance(plan, zr.ShimPlan) and plan.os == "linux" and not plan.fatal
    assert plan.argv == (str(cuda_app), "sgemm")
    cublas = next(b for b in plan.bindings if b.need == "libcublas.so.13")
    assert isinstance(cublas, zr.Binding) and cublas.action == "replace"
    assert Path(cublas.shim).parent == linux_release and cublas.reasons
    profile = zr.inspect(cuda_app, options)
    assert isinstance(profile, zr.TargetProfile)
    assert "libcublas.so.13" in {lib.name for lib in profile.libraries}


def test_run_a_standin_workload_and_get_its_exit_code(linux_release: Path, cuda_app: Path, tmp_path: Path,
                                                       capfd: pytest.CaptureFixture[str]) -> None:
    options = zr.Options(zluda_dir=linux_release, cache_dir=tmp_path / "cache")
    assert zr.run([str(cuda_app)], options) == 0
    assert "create=0" in capfd.readouterr().out  # ZLUDA's stand-in answered, not NVIDIA's 42
    assert zr.run(["sh", "-c", "exit 7"], options) == 7
    assert zr.run(["sh", "-c", "kill -TERM $$"], options) == 128 + 15


def test_prepare_launch_for_a_caller_that_starts_the_process(linux_release: Path, cuda_app: Path,
                                                             tmp_path: Path) -> None:
    options = zr.Options(zluda_dir=linux_release, cache_dir=tmp_path / "cache")
    launch = zr.prepare_launch([str(cuda_app)], options)
    assert launch.argv == (str(cuda_app),) and launch.env["ZLUDA_RUNNER_RELEASE"] == str(linux_release)
    proc = subprocess.run(list(launch.argv), env=dict(launch.env), capture_output=True, text=True,
                          check=False)
    assert (proc.returncode, proc.stdout.strip()) == (0, "create=0")
    plain = subprocess.run([str(cuda_app)], capture_output=True, text=True, check=False)
    assert plain.stdout.strip() == "create=42"  # the same program without the launch: NVIDIA's


def test_launch_errors_are_worded_for_the_caller(linux_release: Path, cuda_app: Path, tmp_path: Path) -> None:
    options = zr.Options(zluda_dir=linux_release, cache_dir=tmp_path / "cache")
    with pytest.raises(zr.CommandNotFoundError) as info:
        zr.run(["no-such-program-here"], options)
    assert info.value.exit_code == 127
    _caller_worded(info.value)
    with pytest.raises(zr.PlanError) as bad:
        zr.plan_command([str(cuda_app)], zr.Options(zluda_dir=tmp_path / "nowhere", cache_dir=tmp_path))
    _caller_worded(bad.value)
    assert "Options(zluda_dir=...)" in (bad.value.hint or "")


def test_a_command_given_as_one_string_is_refused_not_split_into_letters(linux_release: Path, cuda_app: Path,
                                                                        tmp_path: Path) -> None:
    """``zr.run("python infer.py")`` said "command not found: p" (the string taken letter by letter)."""
    options = zr.Options(zluda_dir=linux_release, cache_dir=tmp_path / "cache")
    calls = (zr.run, zr.prepare_launch, zr.plan_command, zr.warmup)
    for call in calls:
        with pytest.raises(TypeError) as info:  # zluda_runner.core.argcheck: refused before anything runs
            call(f"{cuda_app} --flag", options)
        assert isinstance(info.value, zr.ZludaRunnerError) and info.value.kind == "argument-type", call
        assert "(command=...) " in str(info.value), call  # the argument it names
    with pytest.raises(zr.LaunchError) as nul:
        zr.plan_command([str(cuda_app), "a\0b"], options)
    assert "NUL" in nul.value.message or "\\x00" in nul.value.message, nul.value.message
    launch = zr.prepare_launch([Path(cuda_app)], options)  # a Path is a word as its text
    assert launch.argv[-1] == str(cuda_app)


def test_warnings_are_worded_for_the_caller_too() -> None:
    """A listing's warnings name what a Python caller sets (the CLI's read ``--python PY or --cuda N``)."""
    import sys

    listing = zr.list_releases(zr.Options(python=sys.executable))  # this venv's torch is a CPU build
    said = [w for w in listing.report.warnings if "CUDA not checked" in w]
    assert said and said[0].endswith("CUDA not checked (Options(python=...) or cuda=...)"), said


def test_a_fatal_plan_refuses_unless_forced(mismatched_release: Path, cuda_app: Path, tmp_path: Path) -> None:
    options = zr.Options(zluda_dir=mismatched_release, cache_dir=tmp_path / "cache")
    plan = zr.plan_command([str(cuda_app)], options)
    assert [b.need for b in plan.fatal] == ["libcublas.so.13"] and plan.fatal[0].reasons
    with pytest.raises(zr.FatalPlanError) as info:
        zr.run([str(cuda_app)], options)
    assert info.value.exit_code == 3 and "libcublas.so.13" in info.value.message
    _caller_worded(info.value)
    hint = info.value.hint or ""
    assert "zluda_runner.plan_command()" in hint and "Options(force=True)" in hint, hint
    launch = zr.prepare_launch([str(cuda_app)], dataclasses.replace(options, force=True))
    assert launch.plan.fatal  # forced: the launch is prepared all the same


# --------------------------------------------------------------------------- Windows torch/lib


def test_placed_puts_back_exactly_what_was_there(windows_kit: tuple[Path, Path], windows_site: Path,
                                                  tmp_path: Path) -> None:
    _, fork = windows_kit
    lib = windows_site / "torch" / "lib"
    before = snapshot(windows_site)
    options = zr.Options(zluda_dir=fork, cache_dir=tmp_path / "cache")
    plan = zr.plan_command(options=options, torch_lib=lib)
    assert plan.os == "windows" and not plan.fatal
    assert {p.dest_name for p in plan.placements} >= {"cublas64_11.dll", "nvcuda.dll"}
    with zr.placed(lib, options) as done:
        assert isinstance(done, zr.Placed) and "cublas64_11.dll" in done.placed
        assert (lib / "cublas64_11.dll").read_bytes() == (fork / "cublas.dll").read_bytes()
        assert zr.placement_status(lib).state == "placed"
    assert snapshot(windows_site) == before  # byte-identical, nothing left behind
    assert zr.placement_status(lib).state == "none"


def test_placed_restores_when_the_block_raises(windows_kit: tuple[Path, Path], windows_site: Path,
                                               tmp_path: Path) -> None:
    _, fork = windows_kit
    lib = windows_site / "torch" / "lib"
    before = snapshot(windows_site)
    options = zr.Options(zluda_dir=fork, cache_dir=tmp_path / "cache")
    with pytest.raises(KeyboardInterrupt), zr.placed(lib, options):
        assert (lib / "cublas64_11.dll").read_bytes() == (fork / "cublas.dll").read_bytes()
        raise KeyboardInterrupt
    assert snapshot(windows_site) == before


def test_place_then_restore_and_a_file_changed_meanwhile(windows_kit: tuple[Path, Path], windows_site: Path,
                                                        tmp_path: Path) -> None:
    _, fork = windows_kit
    lib = windows_site / "torch" / "lib"
    before = snapshot(windows_site)
    options = zr.Options(zluda_dir=fork, cache_dir=tmp_path / "cache")
    with pytest.raises(zr.PlacementError) as info, zr.placed(lib, options):
        (lib / "cusparse64_11.dll").write_bytes(b"pip reinstalled torch")
    assert "cusparse64_11.dll" in info.value.message
    _caller_worded(info.value)
    assert (lib / "cusparse64_11.dll").read_bytes() == b"pip reinstalled torch"  # kept: pip's
    after = snapshot(windows_site)
    assert after == {**before, "torch/lib/cusparse64_11.dll": after["torch/lib/cusparse64_11.dll"]}
    with pytest.raises(zr.PlacementError) as again:
        zr.restore(lib, options)  # nothing placed there any more
    _caller_worded(again.value)


def test_place_refuses_a_folder_without_a_windows_torch(tmp_path: Path,
                                                        windows_kit: tuple[Path, Path]) -> None:
    with pytest.raises(zr.TargetError) as info:
        zr.place(tmp_path / "missing", zr.Options(zluda_dir=windows_kit[1], cache_dir=tmp_path))
    _caller_worded(info.value)
    assert "torch_lib" in (info.value.hint or "") and "torch/lib" in (info.value.hint or "")  # the fix


# --------------------------------------------------------------------------- results


def test_record_and_query_results(tmp_path: Path) -> None:
    options = zr.Options(results_db=str(tmp_path / "results.db"), cache_dir=tmp_path)
    class Report:  # any report that records itself: a zr.Recordable
        def result_rows(self) -> zr.ResultRows:
            return zr.ResultRows((zr.ResultRow("output:logits", "agree", True),), {"verdict": "agree"})

    assert isinstance(Report(), zr.Recordable)
    recorded = zr.record_result("ab", Report(), options, command=["ab", "x.py"])
    assert recorded.warning is None and recorded.recorded and recorded.run_id
    runs = zr.list_results(options, kind="ab")
    assert [r.run_id for r in runs] == [recorded.run_id]
    assert zr.get_result(recorded.run_id[:8], options).kind == "ab"
    assert zr.list_results(options, kind="doctor") == []
    with pytest.raises(zr.ResultsStoreError) as info:
        zr.list_results(options, since="yesterday")
    _caller_worded(info.value)


def test_probe_a_standin_driver_and_find_it_recorded(standin: Path, tmp_path: Path) -> None:
    """The probe's own stand-in libcuda (tests/fixtures/probe/standin_cuda.c), two cases that pass."""
    options = zr.Options(results_db=str(tmp_path / "results.db"), cache_dir=tmp_path)
    report = zr.run_probe(options, libcuda=standin, cases=["init.cuInit", "error.name"], timeout=20.0)
    assert {c.id: c.status for c in report.cases} == {"init.cuInit": "pass", "error.name": "pass"}
    assert not report.has_problems and not report.could_not_run
    runs = zr.list_results(options, kind="probe")
    assert len(runs) == 1 and runs[0].summary["passed"] == 2, runs
    zr.run_probe(dataclasses.replace(options, record=False), libcuda=standin, cases=["init.cuInit"])
    assert len(zr.list_results(options, kind="probe")) == 1  # record=False kept nothing
    with pytest.raises(zr.ResultsStoreError) as info:  # a reader makes no store
        zr.list_results(dataclasses.replace(options, results_db=str(tmp_path / "other.db")))
    assert info.value.kind == "no-results-store" and str(tmp_path / "other.db") in info.value.message
    assert not (tmp_path / "other.db").exists()


def test_doctor_of_a_made_up_rocm_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``root=``: the host files are read under a made-up tree (tests/doctor's ROCm 6.2, gfx1100), not /."""
    from tests.doctor.test_doctor import rocm62_tree

    for var in ("HIP_PATH", "ROCM_PATH", "HIP_PLATFORM", "LD_LIBRARY_PATH", "HIP_VISIBLE_DEVICES",
                "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    root = rocm62_tree(tmp_path / "root", gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    options = zr.Options(cache_dir=tmp_path / "cache", results_db=str(tmp_path / "results.db"))
    report = zr.run_doctor(options, root=root)
    checks = {c.id: c.status.value for c in report.checks}
    assert [g.gfx for g in report.facts.gpus] == ["gfx1100"]
    assert checks["gpu"] == checks["rocm"] == checks["driver"] == "ok", checks
    assert report.exit_code == 0 and all(s == "ok" for i, s in checks.items() if i not in HIPSDK), checks
    assert [checks[i] for i in HIPSDK] == ["not_applicable"] * 3  # Windows-only: neither ok nor failing
    assert not (tmp_path / "results.db").exists()  # a made-up tree is no machine to remember
