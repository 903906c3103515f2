"""What NVIDIA's real cudart loads, under a real PE loader (Wine), and what our Windows plan does about it.

Each test prints what the Windows programs printed (run with ``-s`` to see it): the stand-ins report
every call with the path of the module that answered.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.windows.conftest import Wine, winpath
from tests.windows.report_lines import Call, read_report
from zluda_runner.cli import main_group
from zluda_runner.inspection.inspect import inspect_path
from zluda_runner.inspection.windows import read_torch_dll_loop
from zluda_runner.launch.windows import zluda_exe_argv
from zluda_runner.plan.build import make_plan
from zluda_runner.release.layout import scan_release_dir


def show(title: str, out: str) -> None:
    print(f"\n--- {title}\n{out.rstrip()}")


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize("cudart", ["cudart64_12.dll", "cudart64_110.dll"])
def test_cudart_takes_no_driver_from_the_app_folder_but_an_already_loaded_one(
    wine: Wine, nvidia_cudart: dict[str, Path], mingw_build, standin, tmp_path: Path, cudart: str
) -> None:
    app = tmp_path / "app"
    app.mkdir()
    shutil.copyfile(nvidia_cudart[cudart], app / cudart)
    shutil.copyfile(standin("zluda nvcuda", "DRIVER", "nvcuda.dll"), app / "nvcuda.dll")
    shutil.copyfile(mingw_build(["windows/cudart_client.c"], "cudart_client.exe", shared=False),
                    app / "client.exe")
    # the stand-in driver sits in the application folder: cudart does not take it
    out = wine.run(["client.exe", cudart, "-"], cwd=app)
    show(f"{cudart}, nvcuda.dll in the app folder", out)
    seen = read_report(out)
    assert seen.device_count == (35,) and seen.in_process == (None,)  # 35: cudaErrorInsufficientDriver
    assert seen.calls == ()
    # loaded first (as torch's DLL loop or our preload does): cudart uses it
    out = wine.run(["client.exe", cudart, ".\\nvcuda.dll"], cwd=app)
    show(f"{cudart}, nvcuda.dll loaded first", out)
    called = "cuGetProcAddress_v2" if cudart == "cudart64_12.dll" else "cuInit"
    seen = read_report(out)
    assert called in seen.functions("zluda nvcuda")
    assert seen.tags() == {"zluda nvcuda"}
    assert seen.modules_of("zluda nvcuda") == {winpath(app / "nvcuda.dll")}


@pytest.fixture
def zluda_release(tmp_path: Path, standin, mingw_build) -> Path:
    """A ZLUDA-shaped Windows release of stand-ins that report their calls, with an injector."""
    root = tmp_path / "zluda"
    root.mkdir()
    shutil.copyfile(standin("zluda nvcuda", "DRIVER", "nvcuda.dll"), root / "nvcuda.dll")
    shutil.copyfile(standin("zluda cublas", "CUBLAS", "cublas64_12.dll"), root / "cublas64_12.dll")
    shutil.copyfile(standin("zluda nvml", "NVML", "nvml.dll"), root / "nvml.dll")
    injector = mingw_build(["windows/injector.c"], "zluda.exe", shared=False, args=["-municode"])
    shutil.copyfile(injector, root / "zluda.exe")
    return root


def test_torch_like_client_uses_every_placed_standin_and_restore_is_exact(
    wine: Wine, windows_torch: Path, zluda_release: Path, mingw_build, tmp_path: Path
) -> None:
    lib = windows_torch / "lib"
    client = mingw_build(["windows/torchlike.c"], "torchlike.exe", shared=False, args=["-municode"])
    loop = read_torch_dll_loop(windows_torch)
    assert loop.present and loop.flags == 0x1100
    run = ["torchlike.exe", winpath(lib), hex(loop.flags)]
    shutil.copyfile(client, tmp_path / "torchlike.exe")
    before = snapshot(lib)
    out = wine.run(run, cwd=tmp_path)
    show("torch-like client, NVIDIA's files", out)
    seen = read_report(out)
    assert seen.functions("nvidia cublas") == ["cublasCreate_v2"] and seen.device_count == (35,)
    assert seen.tags() == {"nvidia cublas"} and seen.modules["nvcuda.dll"] is None

    runner = CliRunner()
    base = ["--zluda-dir", str(zluda_release), "--cache-dir", str(tmp_path / "cache")]
    dry = runner.invoke(main_group, [*base, "plan", "--torch-lib", str(lib), "--json"])
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.output)
    assert all(b["reasons"] for b in plan["bindings"])  # every verdict says why
    same = runner.invoke(main_group, [*base, "place", "--torch-lib", str(lib), "--dry-run", "--json"])
    assert json.loads(same.output)["bindings"] == plan["bindings"]
    verdicts = {b["need"]: (b["action"], b["mechanism"], b["verdict"]) for b in plan["bindings"]}
    show("plan --torch-lib (per-DLL verdicts)", "\n".join(f"{k}: {v}" for k, v in verdicts.items()))
    assert verdicts["nvcuda.dll"] == ("replace", "dll_placement", "ok")
    assert verdicts["cublas64_12.dll"] == ("replace", "dll_placement", "ok")
    assert verdicts["cudart64_12.dll"] == ("keep", "none", "ok")
    placed = runner.invoke(main_group, [*base, "place", "--torch-lib", str(lib)])
    assert placed.exit_code == 0, placed.output

    out = wine.run(run, cwd=tmp_path)
    show("torch-like client after `zluda-run place`", out)
    seen = read_report(out)
    assert seen.modules["nvcuda.dll"] == winpath(lib / "nvcuda.dll")
    assert seen.modules["cublas64_12.dll"] == winpath(lib / "cublas64_12.dll")
    assert seen.functions("zluda cublas") == ["cublasCreate_v2"] and seen.sources() == {"zluda"}
    first = Call("standin", "zluda nvcuda", "cuGetProcAddress_v2", "cuInit", winpath(lib / "nvcuda.dll"))
    assert first in seen.calls
    assert (lib / "cublas64_12.dll").read_bytes() == (zluda_release / "cublas64_12.dll").read_bytes()

    done = runner.invoke(main_group, ["restore", "--torch-lib", str(lib)])
    assert done.exit_code == 0, done.output
    assert snapshot(lib) == before  # NVIDIA's files back, byte for byte; nothing left behind
    out = wine.run(run, cwd=tmp_path)
    show("torch-like client after `zluda-run restore`", out)
    seen = read_report(out)
    assert seen.functions("nvidia cublas") == ["cublasCreate_v2"] and seen.sources() == {"nvidia"}


def test_plain_cuda_program_placement_is_not_enough_the_injector_is(
    wine: Wine, nvidia_cudart: dict[str, Path], zluda_release: Path, mingw_build, tmp_path: Path
) -> None:
    app = tmp_path / "app"
    app.mkdir()
    shutil.copyfile(nvidia_cudart["cudart64_12.dll"], app / "cudart64_12.dll")
    program = mingw_build(["windows/cuda_program.c", nvidia_cudart["cudart64_12.dll"]], "cuda_program.exe",
                          shared=False)
    shutil.copyfile(program, app / "cuda_program.exe")
    plan = make_plan(inspect_path(app / "cuda_program.exe"), scan_release_dir(zluda_release))
    driver = next(b for b in plan.bindings if b.need == "nvcuda.dll")
    show("plan for a plain CUDA program", f"{driver.need}: {driver.mechanism}\n" + "\n".join(driver.reasons))
    # placement cannot make the driver loaded first: the release's injector starts the program instead
    assert (driver.mechanism, driver.verdict, driver.problems) == ("injector", "ok", ())
    assert any("zluda.exe" in r for r in driver.reasons)  # the reasons name the release's injector
    assert not plan.placements
    # what the plan rules out: the driver next to the program is not taken
    shutil.copyfile(zluda_release / "nvcuda.dll", app / "nvcuda.dll")
    out = wine.run(["cuda_program.exe"], cwd=app)
    show("plain program, nvcuda.dll placed next to it", out)
    seen = read_report(out)
    assert seen.device_count == (35,) and seen.in_process == (None,) and seen.calls == ()
    (app / "nvcuda.dll").unlink()
    # what the plan chose: the release's injector starts it with the driver loaded first
    argv = zluda_exe_argv(zluda_release, ["cuda_program.exe"])
    out = wine.run([winpath(Path(argv[0])), *argv[1:]], cwd=app)
    show("plain program through the injector", out)
    seen = read_report(out)
    assert seen.in_process == (winpath(zluda_release / "nvcuda.dll"),)
    assert "cuGetProcAddress_v2" in seen.functions("zluda nvcuda")
    assert seen.modules_of("zluda nvcuda") == {winpath(zluda_release / "nvcuda.dll")}
