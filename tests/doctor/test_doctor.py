"""doctor: this machine (structured JSON, exit code) and fake host trees built in tmp."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

from click.testing import CliRunner

from tests.conftest import put_elf
from zluda_runner.cli import main_group
from zluda_runner.core.exitcodes import CHECK_FAILED as EXIT_FAILED
from zluda_runner.core.exitcodes import OK as EXIT_OK
from zluda_runner.core.settings import Settings
from zluda_runner.doctor import DoctorOptions, Status, run_doctor
from zluda_runner.host.fs import HostFs
from zluda_runner.host.gpus import visible_gpus
from zluda_runner.host.hip import HipDevice, HipInfo, query_hip_isolated
from zluda_runner.host.model import GpuAgent


def _write(root: Path, rel: str, text: str = "") -> Path:
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _kfd_node(
    root: Path,
    node: int,
    target_version: int,
    *,
    simd: int,
    name: str = "",
    vram: int | None = None,
    cpu_cores: int = 0,
) -> None:
    base = f"sys/class/kfd/kfd/topology/nodes/{node}"
    props = (
        f"cpu_cores_count {cpu_cores}\nsimd_count {simd}\nsimd_per_cu 2\n"
        f"gfx_target_version {target_version}\nvendor_id 4098\n"
    )
    _write(root, f"{base}/properties", props)
    _write(root, f"{base}/name", name + "\n")
    if vram is not None:
        _write(
            root, f"{base}/mem_banks/0/properties", f"heap_type {1 if vram else 0}\nsize_in_bytes {vram}\n"
        )


def rocm62_tree(root: Path, *, gfx_nodes: list[tuple[int, int, int | None]], tensile_for: list[str]) -> Path:
    """A Linux host with ROCm 6.2: /opt/rocm, amdgpu loaded, /dev/kfd, KFD nodes, rocBLAS files."""
    _write(root, "opt/rocm/.info/version", "6.2.0-66\n")
    _write(root, "opt/rocm/lib/libamdhip64.so.6.2.60200")
    for name in ("libamdhip64.so.6", "libMIOpen.so.1", "librocblas.so", "libhipblaslt.so"):
        put_elf(root / "opt/rocm/lib" / name)  # real ELF files: the loader model reads their headers
    _write(root, "sys/module/amdgpu/version", "6.8.5\n")
    _write(root, "dev/kfd")
    _kfd_node(root, 0, 0, simd=0, cpu_cores=16)  # the CPU
    for i, (version, simd, vram) in enumerate(gfx_nodes, start=1):
        _kfd_node(root, i, version, simd=simd, vram=vram)
    lib = "opt/rocm/lib/rocblas/library"
    for gfx in tensile_for:
        _write(root, f"{lib}/TensileLibrary_lazy_{gfx}.dat")
        _write(root, f"{lib}/TensileLibrary_Type_HH_Contraction_l_Ailk_Bljk_Cijk_Dijk_{gfx}.co")
        _write(root, f"opt/rocm/lib/hipblaslt/library/extop_{gfx}.co")
    _write(root, f"{lib}/TensileManifest.txt")
    return root


def _doctor(root: Path, env: dict[str, str] | None = None, **kw) -> object:
    return run_doctor(
        DoctorOptions(
            root=root, env=env or {}, platform="linux", machine="x86_64", home=Path("/home/user"), **kw
        )
    )


def test_doctor_on_the_bare_test_host_json_and_exit_code() -> None:
    """The doctor as a user starts it, on the test's bare host (tests/conftest.py: an empty fake root,
    whatever HIP, GPU or /dev/kfd the real machine has): no KFD, so no GPU, failed checks, exit 3."""
    root = Path(os.environ["ZLUDA_RUNNER_ROOT"])
    assert not (root / "dev" / "kfd").exists()
    result = CliRunner().invoke(main_group, ["doctor", "--json"])
    data = json.loads(result.output)
    assert data["schema"] == 1
    statuses = {c["id"]: c["status"] for c in data["checks"]}
    assert set(statuses.values()) <= {"ok", "warn", "fail", "not_applicable"}
    assert all(c["fix"] for c in data["checks"] if c["status"] in ("warn", "fail"))
    # the exit code follows the checks' statuses, recomputed here from the JSON
    assert result.exit_code == (EXIT_FAILED if "fail" in statuses.values() else EXIT_OK)
    assert data["exit_code"] == result.exit_code
    # facts the doctor must agree with, read here independently of it
    assert data["facts"]["arch"] == platform.machine()
    assert data["facts"]["os"] == {"win32": "windows", "darwin": "macos"}.get(sys.platform, sys.platform)
    assert statuses["platform"] == ("ok" if platform.machine() in ("x86_64", "AMD64") else "fail")
    if sys.platform.startswith("linux"):
        # no KFD: neither HIP nor the KFD topology nor rocminfo can show a GPU; the doctor must say
        # so as failed checks, and exit 3
        assert data["facts"]["gpus"] == []
        assert statuses["gpu"] == "fail"
        assert statuses["driver"] == "fail"
        assert {"gpu_arch", "device_order"} <= set(data["skipped"])
        assert result.exit_code == EXIT_FAILED == 3
    strict = CliRunner().invoke(main_group, ["doctor", "--strict"])
    worst = {"fail", "warn"} & set(statuses.values())
    assert strict.exit_code == (EXIT_FAILED if worst else EXIT_OK), strict.output


def test_rocm62_gfx1100_tree_is_ok(tmp_path: Path) -> None:
    rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100", "gfx1030"])
    report = _doctor(tmp_path)
    checks = {c.id: c for c in report.checks}
    assert report.facts.gpu_source == "kfd"
    assert [g.gfx for g in report.facts.gpus] == ["gfx1100"]
    assert report.facts.gpus[0].compute_units == 48
    assert report.facts.rocm is not None and report.facts.rocm.version == "6.2.0-66"
    for check_id in (
        "gpu",
        "gpu_arch",
        "device_order",
        "driver",
        "hip_runtime",
        "rocm",
        "rocblas",
        "hipblaslt",
        "miopen",
    ):
        assert checks[check_id].status is Status.OK, (check_id, checks[check_id].message)
    assert checks["rocblas"].details["files"] == 2
    assert report.facts.driver_version == "amdgpu 6.8.5"
    assert report.count(Status.FAIL) == 0 and report.exit_code == EXIT_OK


def test_gfx1032_without_tensile_files_suggests_override(tmp_path: Path) -> None:
    rocm62_tree(tmp_path, gfx_nodes=[(100302, 56, 8 << 30)], tensile_for=["gfx1030", "gfx1100"])
    report = _doctor(tmp_path)
    rocblas = report.check("rocblas")
    assert rocblas is not None and rocblas.status is Status.FAIL
    assert "gfx1032" in rocblas.message
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in rocblas.fix
    assert "gfx1030" in rocblas.fix  # the target whose kernels are there
    assert report.check("hipblaslt").status is Status.WARN
    assert "DISABLE_ADDMM_CUDA_LT=1" in report.check("hipblaslt").fix
    assert report.exit_code == EXIT_FAILED

    # with the override set, the same tree passes the rocBLAS check through gfx1030's kernels
    fixed = _doctor(tmp_path, env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    assert fixed.check("rocblas").status is Status.OK
    assert {k: fixed.check("rocblas").details[k] for k in ("gfx", "device_gfx")} == {
        "gfx": "gfx1030", "device_gfx": "gfx1032"}  # judged through the override's kernels, for this device


def test_apu_listed_before_dgpu_is_judged_as_zluda_run_shows_it(tmp_path: Path) -> None:
    """An APU's GPU before a dGPU: zluda-run's dedicated-gpu default shows the workload the dGPU, so the
    doctor judges that one (the very decision the plan makes) and says so; with the default off
    (--no-defaults, or ZLUDA_RUNNER_DEFAULTS_OFF) the iGPU is device 0 and the doctor advises."""
    rocm62_tree(tmp_path, gfx_nodes=[(110003, 24, 0), (110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    report = _doctor(tmp_path)
    order = report.check("device_order")
    assert [g.integrated for g in report.facts.gpus] == [True, False]
    assert order.status is Status.OK, order.message
    assert "HIP_VISIBLE_DEVICES=1" in order.message and "HIP_VISIBLE_DEVICES=1" in order.fix
    assert report.check("gpu_arch").details["gfx"] == "gfx1100"
    assert report.check("rocblas").status is Status.OK  # judged for the gfx1100 the run uses

    for off in (_doctor(tmp_path, settings=Settings(defaults=False)),
                _doctor(tmp_path, env={"ZLUDA_RUNNER_DEFAULTS_OFF": "dedicated-gpu"})):
        order = off.check("device_order")
        assert order.status is Status.WARN
        assert "HIP_VISIBLE_DEVICES=1" in order.fix
        # the integrated gfx1103 is device 0, so rocBLAS is judged for it (override suggested)
        assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in off.check("rocblas").fix

    chosen = _doctor(tmp_path, env={"HIP_VISIBLE_DEVICES": "1"})
    assert chosen.check("device_order").status is Status.OK
    assert chosen.check("rocblas").status is Status.OK


def test_vega_is_refused_for_the_rewrite(tmp_path: Path) -> None:
    rocm62_tree(tmp_path, gfx_nodes=[(90006, 240, 16 << 30)], tensile_for=["gfx906"])
    report = _doctor(tmp_path)
    arch = report.check("gpu_arch")
    assert arch.status is Status.FAIL and "RDNA1" in arch.message


def test_missing_kfd_access_and_libraries(tmp_path: Path) -> None:
    _write(tmp_path, "opt/rocm/.info/version", "6.2.0\n")
    _write(tmp_path, "sys/module/amdgpu/initstate", "live\n")
    _kfd_node(tmp_path, 1, 110000, simd=96, vram=24 << 30)
    report = _doctor(tmp_path)
    assert report.check("driver").status is Status.FAIL and "/dev/kfd" in report.check("driver").message
    assert report.check("hip_runtime").status is Status.FAIL
    assert report.check("miopen").status is Status.WARN
    assert report.check("miopen").details["default"]["applied"] is True  # what a run does: cuDNN off


def test_injected_hip_query_wins_over_kfd(tmp_path: Path) -> None:
    rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    info = HipInfo(
        library="libamdhip64.so.6",
        runtime_version=60241134,
        driver_version=60241134,
        devices=[HipDevice(0, "AMD Radeon RX 7900 XTX", "gfx1100:sramecc-:xnack-", "gfx1100", 24 << 30)],
    )
    report = _doctor(tmp_path, hip_query=lambda: info)
    assert report.facts.gpu_source == "hip"
    assert report.check("hip_runtime").status is Status.OK
    assert "6.2.41134" in report.check("hip_runtime").message

    # the library is installed but HIP could not load it by name: say how to make it findable
    missing = HipInfo(error="HIP runtime not loadable (libamdhip64.so.6: not found)")
    unloadable = _doctor(tmp_path, hip_query=lambda: missing)
    hip = unloadable.check("hip_runtime")
    assert hip.status is Status.FAIL and "/opt/rocm/lib" in hip.message  # where it is installed
    assert "ldconfig" in hip.fix and unloadable.facts.gpu_source == "kfd"


def test_doctor_cli_with_root_option_and_env(tmp_path: Path) -> None:
    rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    runner = CliRunner()
    cache = ["--cache-dir", str(tmp_path / "zr-cache")]
    ok = runner.invoke(main_group, [*cache, "doctor", "--root", str(tmp_path), "--json"])
    data = json.loads(ok.output)
    assert data["facts"]["gpus"][0]["gfx"] == "gfx1100"
    assert ok.exit_code == EXIT_OK, ok.output
    assert "torch" in data["skipped"] and "warn" not in {c["status"] for c in data["checks"]}
    # without MIOpen: a warning, which only --strict turns into a failing exit code
    (tmp_path / "opt/rocm/lib/libMIOpen.so.1").unlink()
    env = {"ZLUDA_RUNNER_ROOT": str(tmp_path)}
    lenient = runner.invoke(main_group, [*cache, "doctor"], env=env)
    assert lenient.exit_code == EXIT_OK and "[WARN] miopen" in lenient.output, lenient.output
    strict = runner.invoke(main_group, [*cache, "doctor", "--strict"], env=env)
    assert strict.exit_code == EXIT_FAILED
    bad = runner.invoke(main_group, ["--json", "doctor", "--root", str(tmp_path / "missing")])
    error = json.loads(bad.stdout)
    assert (bad.exit_code, error["kind"]) == (1, "host") and str(tmp_path / "missing") in error["error"]


def test_hostfs_maps_windows_and_posix_paths(tmp_path: Path) -> None:
    fs = HostFs(tmp_path)
    assert fs.path("/opt/rocm") == tmp_path / "opt" / "rocm"
    assert fs.path(r"C:\Program Files\AMD\ROCm\6.2") == tmp_path / "Program Files" / "AMD" / "ROCm" / "6.2"
    assert HostFs(None).path("/opt/rocm") == Path("/opt/rocm")


def test_windows_hip_sdk_layout_under_root(tmp_path: Path) -> None:
    sdk = "Program Files/AMD/ROCm/6.2"
    _write(tmp_path, f"{sdk}/bin/amdhip64_6.dll")
    _write(tmp_path, f"{sdk}/bin/rocblas/library/TensileLibrary_lazy_gfx1100.dat")
    report = run_doctor(
        DoctorOptions(
            root=tmp_path,
            env={"HIP_PATH": "C:\\Program Files\\AMD\\ROCm\\6.2\\"},
            platform="win32",
            machine="AMD64",
            home=Path("/Users/u"),
        )
    )
    rocm = report.check("rocm")
    assert rocm.status is Status.OK and "6.2" in rocm.message and "rocm6" in rocm.message
    assert report.check("hip_runtime").status is Status.OK


def test_igpu_first_through_the_hip_runtime(cc_build, tmp_path: Path) -> None:
    """HIP lists the 780M before the 7900 XTX: the doctor says to pick the dGPU, and a user's
    HIP_VISIBLE_DEVICES / HSA_OVERRIDE_GFX_VERSION do not hide from it what is really there."""
    lib = str(cc_build(["host/fake_hip.c"], "libamdhip64.so.6"))
    rocm62_tree(tmp_path, gfx_nodes=[], tensile_for=["gfx1100"])

    def doctor(env: dict[str, str]) -> object:
        hip_env = {**os.environ, **env}
        return _doctor(tmp_path, env=env, hip_query=lambda: query_hip_isolated([lib], env=hip_env))

    first = doctor({})
    assert first.facts.gpu_source == "hip" and [g.integrated for g in first.facts.gpus] == [True, False]
    order = first.check("device_order")
    assert order.status is Status.OK and "HIP_VISIBLE_DEVICES=1" in order.fix  # zluda-run's default
    assert "780M" in order.message and "7900 XTX" in order.message
    off = doctor({"ZLUDA_RUNNER_DEFAULTS_OFF": "dedicated-gpu"})
    order = off.check("device_order")
    assert order.status is Status.WARN and "HIP_VISIBLE_DEVICES=1" in order.fix
    assert "780M" in order.message and "7900 XTX" in order.message
    chosen = doctor({"HIP_VISIBLE_DEVICES": "1"})
    assert [g.gfx for g in chosen.facts.gpus] == ["gfx1103", "gfx1100"]  # still sees both
    assert chosen.check("device_order").status is Status.OK
    assert chosen.check("rocblas").status is Status.OK and chosen.exit_code == EXIT_OK
    hidden = doctor({"HIP_VISIBLE_DEVICES": "4"})
    assert hidden.check("device_order").status is Status.FAIL
    assert "HIP_VISIBLE_DEVICES" in hidden.check("device_order").message  # what hides them


def test_visible_gpus_follow_rocr_then_hip_selection() -> None:
    gpus = [GpuAgent(i, f"gpu{i}", "gfx1100", "kfd") for i in range(3)]
    names = lambda env: [g.name for g in visible_gpus(gpus, env)]  # noqa: E731
    assert names({}) == ["gpu0", "gpu1", "gpu2"]
    assert names({"HIP_VISIBLE_DEVICES": "2,0"}) == ["gpu2", "gpu0"]
    assert names({"CUDA_VISIBLE_DEVICES": "1"}) == ["gpu1"]
    assert names({"ROCR_VISIBLE_DEVICES": "1,2", "HIP_VISIBLE_DEVICES": "1"}) == ["gpu2"]
    assert names({"HIP_VISIBLE_DEVICES": "1,7,0"}) == ["gpu1"]  # stops at the first invalid index
    assert names({"HIP_VISIBLE_DEVICES": "GPU-uuid"}) == ["gpu0", "gpu1", "gpu2"]  # not modelled
    assert names({"HIP_VISIBLE_DEVICES": ""}) == ["gpu0", "gpu1", "gpu2"]  # HIP's empty: no choice
    # ROCm's rules (host.visibility): ROCr's set-but-empty shows none; -1 / abc end the list at once
    assert names({"ROCR_VISIBLE_DEVICES": ""}) == []
    assert names({"HIP_VISIBLE_DEVICES": "-1"}) == names({"HIP_VISIBLE_DEVICES": "abc,0"}) == []
    assert names({"HIP_VISIBLE_DEVICES": "1,-1,0"}) == ["gpu1"]


def test_windows_hip_sdk_too_old_for_the_fork_names_the_version_it_wants(tmp_path: Path) -> None:
    _write(tmp_path, "Program Files/AMD/ROCm/5.5/bin/amdhip64.dll")
    version_py = '__version__ = "2.3.1+cu118"\ncuda = "11.8"\nhip = None\n'  # what inspection reads
    facts = json.dumps({"torch": {"path": "/venv/torch", "version_py": version_py}})
    fake_python = _write(tmp_path, "fake-python",
                         f"#!/bin/sh\nprintf '%s\\n' 'ZLUDA_RUNNER_TARGET={facts}'\n")
    fake_python.chmod(0o755)
    report = run_doctor(
        DoctorOptions(
            root=tmp_path,
            env={"HIP_PATH": "C:\\Program Files\\AMD\\ROCm\\5.5\\"},
            platform="win32",
            machine="AMD64",
            home=Path("/Users/u"),
            check_torch=True,
            python=str(fake_python),
        )
    )
    assert report.check("torch").status is Status.OK and "cu118" in report.check("torch").message
    assert report.check("rocm").status is Status.WARN and "5.7" in report.check("rocm").message  # the bound
    release = report.check("release")
    # the run's own verdict: it refuses this host, so the doctor fails it, in the run's words
    assert release.status is Status.FAIL and all(d in release.message for d in ("5.5", "C:\\Program Files"))
    assert "5.7: fork-3.9.6, fork-3.9.5, fork-3.9.2, fork-rel.11cc584" in release.message  # what they need
    assert all(v in release.fix for v in ("5.7", "6.2", "6.4", "7.1"))  # the HIP SDKs that would fit


def test_windows_hip_sdk_7_is_not_called_a_rocm6_fork_sdk(tmp_path: Path) -> None:
    _write(tmp_path, "Program Files/AMD/ROCm/7.1/bin/amdhip64_7.dll")
    _write(tmp_path, "Program Files/AMD/ROCm/5.7/bin/amdhip64.dll")
    report = run_doctor(
        DoctorOptions(root=tmp_path, env={}, platform="win32", machine="AMD64", home=Path("/Users/u"))
    )
    rocm = report.check("rocm")
    # the newer of the two, and no fork asset named for HIP SDK 7
    assert (rocm.status, rocm.details["version"], rocm.details["fork_asset"]) == (Status.OK, "7.1", None)
    assert report.check("driver").status is Status.WARN  # no GPU, no HIP: no driver version to read


def test_doctor_mentions_a_release_that_failed_on_this_gpu_before(tmp_path: Path) -> None:
    """The results store feeds the doctor: a torch-op run with failures on gfx1100 is named."""
    from tests.results import reports
    from zluda_runner.core.settings import Settings
    from zluda_runner.results.recording import record_report

    settings = Settings(cache_dir=tmp_path / "cache")
    outcome = record_report("torch-ops", reports.torch_ops(10, failing={3}), settings=settings,
                            command=["probe", "--torch"], release=reports.FORK, host=reports.HOST)
    assert outcome.warning is None
    root = tmp_path / "root"
    rocm62_tree(root, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    report = _doctor(root, settings=settings)
    history = next(c for c in report.checks if c.id == "history")
    assert history.status is Status.WARN
    assert all(d in history.message for d in ("fork-3.9.5", "1 torch-ops", "gfx1100"))
    assert history.fix == "See {cmd:results list --gfx gfx1100} and {cmd:results show ID}."  # neutral markup

    # the same fix worded for each front end: the API's caller reads functions, the command line commands
    import zluda_runner as zr

    api = zr.run_doctor(zr.Options(cache_dir=tmp_path / "cache"), root=root).check("history")
    assert api is not None
    assert api.fix == "See zluda_runner.list_results() and zluda_runner.get_result().", api
    out = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path / "cache"), "doctor",
                                          "--root", str(root), "--json"])
    cli = next(c for c in json.loads(out.output)["checks"] if c["id"] == "history")
    assert cli["fix"] == ("See `zluda-run results list --gfx gfx1100` and `zluda-run results show ID`."), cli


def test_doctor_says_nothing_of_history_without_a_store(tmp_path: Path) -> None:
    from zluda_runner.core.settings import Settings

    rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    report = _doctor(tmp_path, settings=Settings(cache_dir=tmp_path / "cache"))
    assert "history" not in {c.id for c in report.checks}
    assert not (tmp_path / "cache" / "results.db").exists()


def test_a_distribution_hip_is_hip_5_2_for_the_doctor_too_and_v6_does_not_fit(tmp_path: Path) -> None:
    """Debian's libamdhip64-5 ships /usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153: the doctor,
    `releases` and `run` (one finder, host/hipversion) agree on HIP 5.2, and no check claims the
    upstream rewrite (ROCm 6 or 7) fits."""
    from zluda_runner.core.settings import Settings

    lib = tmp_path / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libamdhip64.so.5.2.21153").touch()
    (lib / "libamdhip64.so.5").symlink_to("libamdhip64.so.5.2.21153")
    report = _doctor(tmp_path, settings=Settings(cache_dir=tmp_path / "cache"))
    rocm = report.facts.rocm
    assert rocm is not None and rocm.kind == "distribution" and rocm.major_minor == (5, 2)
    release = next(c for c in report.checks if c.id == "release")
    assert release.status is Status.FAIL
    assert release.message.startswith(
        "no ZLUDA release fits this host (linux, HIP 5.2 from the distribution's libamdhip64-5 package")


def test_a_cache_that_is_a_file_is_said_once_with_the_caches_own_hint(tmp_path: Path) -> None:
    """The cached_releases check embedded str() of the cache's error: its own "hint:" line ended up
    inside the check's message."""
    from zluda_runner.core.settings import Settings

    rocm62_tree(tmp_path / "root", gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    cache = tmp_path / "cache"
    cache.write_bytes(b"not a folder")
    report = _doctor(tmp_path / "root", settings=Settings(cache_dir=cache))
    check = report.check("cached_releases")
    assert check is not None and check.status is Status.WARN
    assert str(cache) in check.message and "hint:" not in check.message
    assert check.fix is not None and "another" in check.fix and "hint:" not in check.fix
