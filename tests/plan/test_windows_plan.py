"""The Windows path end to end on PE fixtures: a cu118 torch tree, the fork's un-renamed DLLs, the plan
(names, NVRTC backup, ZLUDA_NVRTC_LIB, nvcuda.dll used because torch's DLL loop loads it), placement
into torch/lib and exact restore."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.golden import assert_golden
from zluda_runner.inspection.inspect import inspect_path
from zluda_runner.launch.prepare import launch_env
from zluda_runner.launch.windows import place, placements_of, restore, status, torch_lib_of
from zluda_runner.plan.build import make_plan
from zluda_runner.plan.model import ShimPlan
from zluda_runner.release.layout import layout_from_manifest
from zluda_runner.release.manifest import load_manifest

# torch/lib name -> -D flag of win_stub.c (NVIDIA's originals, as a cu118 torch ships them)
ORIGINALS = {
    "cublas64_11.dll": "CUBLAS",
    "cusparse64_11.dll": "CUSPARSE",
    "cufft64_10.dll": "CUFFT",
    "nvrtc64_112_0.dll": "NVRTC",
    "cudart64_110.dll": "CUDART",
}
# the fork's zip: file -> -D flag
FORK_FILES = {
    "nvcuda.dll": "DRIVER",
    "nvml.dll": "NVML",
    "cublas.dll": "CUBLAS",
    "cusparse.dll": "CUSPARSE",
    "cufft.dll": "CUFFT",
    "cufftw.dll": "CUFFTW",
    "nvrtc.dll": "NVRTC",
}


@pytest.fixture(scope="module")
def windows_setup(mingw_build, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("win")
    site = base / "venv" / "Lib" / "site-packages"
    lib = site / "torch" / "lib"
    lib.mkdir(parents=True)
    (site / "torch" / "version.py").write_text(
        "__version__ = '2.3.1+cu118'\ncuda = '11.8'\nhip = None\ngit_version = 'x'\n"
    )
    # torch's own __init__.py (the same text in every platform's wheel): its Windows DLL loop
    (site / "torch" / "__init__.py").write_text(real_torch_init().read_text())
    originals = []
    for name, flag in ORIGINALS.items():
        built = mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}", "-DANSWER=42"])
        shutil.copy2(built, lib / name)
        originals.append(built)
    torch_cuda = mingw_build(["plan/win_torch_cuda.c", *originals], "torch_cuda.dll")
    shutil.copy2(torch_cuda, lib / "torch_cuda.dll")
    root = base / "zluda"
    root.mkdir()
    for name, flag in FORK_FILES.items():
        shutil.copy2(mingw_build(["plan/win_stub.c"], name, args=[f"-D{flag}"]), root / name)
    return site, root


def real_torch_init() -> Path:
    import importlib.util

    from tests.conftest import require

    spec = importlib.util.find_spec("torch")
    require(spec is not None and spec.origin is not None,
            "torch is not installed: its __init__.py is the fixture")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin)


def _unlined(text: str) -> str:
    """``text`` with the line of the installed torch's __init__.py (its version's) as ``<line>``."""
    return re.sub(r"torch/__init__\.py:\d+:", "torch/__init__.py:<line>:", text)


def _reasons(plan: ShimPlan) -> str:
    """Each binding's reasons, whole, as ``need: reason`` lines."""
    return _unlined("".join(f"{b.need}: {r}\n" for b in plan.bindings for r in b.reasons))


def _fork_asset():
    release = load_manifest().find("fork-3.9.5")
    return next(a for a in release.assets if a.name == "ZLUDA-windows-rocm6-amd64.zip")


def test_fork_plan_for_a_cu118_torch(windows_setup: tuple[Path, Path], tmp_path: Path) -> None:
    site, root = windows_setup
    lib = site / "torch" / "lib"
    profile = inspect_path(site)
    assert profile.os == "windows" and profile.cuda_major == 11
    plan = make_plan(profile, layout_from_manifest(root, _fork_asset()))
    by_need = {b.need: b for b in plan.bindings}
    cublas = by_need["cublas64_11.dll"]
    assert (cublas.action, cublas.mechanism) == ("replace", "dll_placement")
    assert Path(cublas.shim).name == "cublas.dll"
    assert Path(by_need["cufft64_10.dll"].shim).name == "cufft.dll"
    assert by_need["cudart64_110.dll"].action == "keep"
    driver = by_need["nvcuda.dll"]
    assert (driver.action, driver.mechanism) == ("replace", "dll_placement")
    assert plan.path_prepend == (str(root),)
    # nvcuda.dll: torch's DLL loop (the line of torch/__init__.py) loads it by a restricted search, not
    # from PATH; each other DLL's reason names its file and the fork's
    assert_golden("windows_plan_fork_cu118_reasons", _reasons(plan), tmp=site.parents[2])
    assert {p.dest_name for p in plan.placements} >= {"nvcuda.dll", "cublas64_11.dll"}
    # The fork's nvrtc: torch's original is kept as nvrtc_cuda.dll and named in ZLUDA_NVRTC_LIB.
    assert plan.env["ZLUDA_NVRTC_LIB"] == str(lib / "nvrtc_cuda.dll")
    nvrtc = next(p for p in plan.placements if p.dest_name == "nvrtc64_112_0.dll")
    assert nvrtc.backup_name == "nvrtc_cuda.dll" and Path(nvrtc.source).name == "nvrtc.dll"
    assert "DISABLE_ADDMM_CUDA_LT" not in plan.env  # torch 2.3 has no cuBLASLt addmm path
    env = launch_env(plan, tmp_path, base_env={"PATH": "/usr/bin"})
    assert env["PATH"].split(":")[0] == str(root) and env["ZLUDA_NVRTC_LIB"] == plan.env["ZLUDA_NVRTC_LIB"]


def test_fork_placement_and_exact_restore(windows_setup: tuple[Path, Path], tmp_path: Path) -> None:
    site, root = windows_setup
    work = tmp_path / "site"
    shutil.copytree(site, work)
    lib = work / "torch" / "lib"
    before = {p.name: p.read_bytes() for p in lib.iterdir()}
    plan = make_plan(inspect_path(work), layout_from_manifest(root, _fork_asset()))
    place(torch_lib_of(plan), placements_of(plan))
    assert (lib / "cublas64_11.dll").read_bytes() == (root / "cublas.dll").read_bytes()
    assert (lib / "cusparse64_11.dll").read_bytes() == (root / "cusparse.dll").read_bytes()
    assert (lib / "nvrtc64_112_0.dll").read_bytes() == (root / "nvrtc.dll").read_bytes()
    assert (lib / "nvrtc_cuda.dll").read_bytes() == before["nvrtc64_112_0.dll"]
    assert (lib / "cudart64_110.dll").read_bytes() == before["cudart64_110.dll"]  # kept
    st = status(lib)
    assert st.state == "placed" and not st.drift
    assert place(torch_lib_of(plan), placements_of(plan)).already_placed  # a second run changes nothing
    # pip reinstalls torch: the original cuBLAS is back; status sees it, the next run re-places.
    (lib / "cublas64_11.dll").write_bytes(before["cublas64_11.dll"])
    drift = status(lib).drift
    assert len(drift) == 1 and drift[0].startswith("cublas64_11.dll has its original content")
    place(torch_lib_of(plan), placements_of(plan))
    assert (lib / "cublas64_11.dll").read_bytes() == (root / "cublas.dll").read_bytes()
    restore(lib)
    after = {p.name: p.read_bytes() for p in lib.iterdir() if not p.name.startswith(".")}
    assert after == before


def test_without_a_dll_loop_the_driver_is_preloaded(windows_setup: tuple[Path, Path], tmp_path: Path) -> None:
    """An old torch (no loop in __init__.py): placing nvcuda.dll is not enough; the plan preloads it."""
    site, root = windows_setup
    work = tmp_path / "site"
    shutil.copytree(site, work)
    (work / "torch" / "__init__.py").write_text("import os\n")
    plan = make_plan(inspect_path(work), layout_from_manifest(root, _fork_asset()))
    driver = next(b for b in plan.bindings if b.need == "nvcuda.dll")
    assert driver.mechanism == "preload" and driver.verdict == "ok"
    said = _unlined("".join(r + "\n" for r in driver.reasons))
    assert_golden("windows_plan_no_dll_loop_driver_reasons", said, tmp=tmp_path)  # placement is not enough
    assert "nvcuda.dll" not in {p.dest_name for p in plan.placements}
    from zluda_runner.launch.windows import prepare_windows_launch

    launch = prepare_windows_launch(plan, ["python", "x.py"], tmp_path / "cache", base_env={})
    assert launch.preloaded == [str(root / "nvcuda.dll")]
    assert launch.env["ZLUDA_RUNNER_PRELOAD"].split(";")[0] == str(root / "nvcuda.dll")
    hook = Path(launch.env["PYTHONPATH"].split(";")[0]) / "sitecustomize.py"
    assert "LoadLibraryExW" in hook.read_text()
    assert launch.placement is not None and (work / "torch" / "lib" / "cublas64_11.dll").exists()
    from zluda_runner.launch.windows import restore

    restore(work / "torch" / "lib")


def _fork_folder(root: Path, dest: Path, *, launchers: tuple[str, ...]) -> Path:
    dest.mkdir()
    for name in FORK_FILES:
        shutil.copy2(root / name, dest / name)
    for name in launchers:  # only their presence tells the fork's zip from another
        (dest / name).write_bytes(b"MZ")
    return dest


def test_zluda_dir_on_a_fork_folder_maps_like_the_manifest_release(
        windows_setup: tuple[Path, Path], tmp_path: Path) -> None:
    """--zluda-dir on the unpacked fork zip: its un-renamed DLLs get the names the manifest gives them
    (cublas.dll -> cublas64_11.dll), the saved NVRTC original and its variable, the cuFFTW stub note."""
    from zluda_runner.release.layout import scan_release_dir

    site, root = windows_setup
    fork = _fork_folder(root, tmp_path / "ZLUDA", launchers=("zluda.exe", "zluda_redirect.dll"))
    scanned = scan_release_dir(fork)
    from_manifest = layout_from_manifest(fork, _fork_asset())

    def key(layout):  # type: ignore[no-untyped-def]
        return sorted((Path(s.path).name, s.family, s.cuda_major, tuple(s.load_names), s.original_saved_as,
                       tuple(s.needs_env), s.stub is not None) for s in layout.shims)

    assert key(scanned) == key(from_manifest)
    assert {s.recognised_by for s in scanned.shims} == {"manifest"}  # the fork's names, every file
    assert set(scanned.launchers) == {"injector", "redirect_dll"}
    plan = make_plan(inspect_path(site), scanned)
    by_need = {b.need: b for b in plan.bindings}
    assert plan.verdict != "fatal", [b.reasons for b in plan.fatal]
    assert Path(by_need["cublas64_11.dll"].shim).name == "cublas.dll"
    assert Path(by_need["cusparse64_11.dll"].shim).name == "cusparse.dll"
    placed = {p.dest_name for p in plan.placements}
    assert placed >= {"cublas64_11.dll", "cusparse64_11.dll", "cufft64_10.dll"}


@pytest.mark.parametrize("files", [
    ("nvcuda.dll", "nvml.dll", "cublas.dll", "cusparse.dll"),  # an older or trimmed fork folder
    ("nvcuda.dll", "cublas.dll"),
])
def test_zluda_dir_on_a_fork_folder_that_is_no_manifest_asset_maps_the_fork_names(
        windows_setup: tuple[Path, Path], tmp_path: Path, files: tuple[str, ...]) -> None:
    """A fork-shaped folder (the fork's injector, its un-renamed DLLs) that is not file for file one of
    the manifest's fork zips (no cuFFT, no NVRTC, no zluda_redirect.dll) is still read with the fork's
    names: each DLL it has gets the name torch loads it under (on 3abffb6: FATAL, cublas64_11.dll
    missing, as cublas.dll kept its own name); what it lacks stays NVIDIA's."""
    from zluda_runner.release.layout import scan_release_dir

    site, root = windows_setup
    fork = tmp_path / "ZLUDA"
    fork.mkdir()
    for name in files:
        shutil.copy2(root / name, fork / name)
    (fork / "zluda.exe").write_bytes(b"MZ")
    scanned = scan_release_dir(fork)
    mapped = {Path(s.path).name: (s.family, s.load_names, s.cuda_major, s.recognised_by)
              for s in scanned.shims}
    assert mapped["cublas.dll"] == ("cublas", ("cublas64_11.dll",), 11, "manifest")
    assert set(mapped) == set(files)
    plan = make_plan(inspect_path(site), scanned)
    assert plan.verdict != "fatal", [b.reasons for b in plan.fatal]
    by_need = {b.need: b for b in plan.bindings}
    assert (by_need["cublas64_11.dll"].action, Path(by_need["cublas64_11.dll"].shim).name) == (
        "replace", "cublas.dll")
    placed = {p.dest_name: Path(p.source).name for p in plan.placements}
    assert placed["cublas64_11.dll"] == "cublas.dll"
    assert "cufft64_10.dll" not in placed and "nvrtc64_112_0.dll" not in placed  # NVIDIA's stay
    assert ("cusparse64_11.dll" in placed) == ("cusparse.dll" in files)


def test_zluda_dir_without_the_fork_launcher_keeps_its_names(
        windows_setup: tuple[Path, Path], tmp_path: Path) -> None:
    """A folder that is not the fork's zip (no zluda.exe: upstream v5 ships cublas.dll for CUDA 12 under
    zluda_with.exe) keeps its names: no manifest map is applied to it."""
    from zluda_runner.release.layout import scan_release_dir

    _, root = windows_setup
    other = _fork_folder(root, tmp_path / "other", launchers=("zluda_with.exe",))
    scanned = scan_release_dir(other)
    cublas = next(s for s in scanned.shims if s.family == "cublas")
    assert (cublas.load_names, cublas.cuda_major, cublas.recognised_by) == (("cublas.dll",), None, "name")


def test_the_plan_view_says_which_start_up_code_runs_and_where_it_is_written() -> None:
    from zluda_runner.plan.model import ShimPlan, StartupHook
    from zluda_runner.report.plan_view import windows_setup_lines

    site = "C:\\ComfyUI\\python_embeded\\Lib\\site-packages"
    pth = ShimPlan(os="windows", startup_hook=StartupHook("pth", site, [site + "\\torch\\lib\\nvcuda.dll"]))
    text = "".join(line + "\n" for line in windows_setup_lines(pth))
    assert f"{site}\\zluda_runner_startup.pth" in text  # where it is written
    assert_golden("plan_windows_setup_pth", text)
    regular = ShimPlan(os="windows", startup_hook=StartupHook("sitecustomize"))
    text = "".join(line + "\n" for line in windows_setup_lines(regular))
    assert_golden("plan_windows_setup_sitecustomize", text)


def test_plan_verify_load_on_a_windows_plan_says_it_cannot_prove_it() -> None:
    from zluda_runner.core.errors import LaunchError
    from zluda_runner.launch.verify import verify_torch_import
    from zluda_runner.plan.model import ShimPlan

    with pytest.raises(LaunchError) as info:  # on 5c673db: '0 of 0 planned bindings taken', exit 0
        verify_torch_import(ShimPlan(os="windows"), Path("/nonexistent-cache"))
    assert info.value.kind == "launch" and "Windows" in info.value.message
    assert "--verify-load --" in (info.value.hint_for("command line") or "")
