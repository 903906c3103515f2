"""The stand-in release generator: what a target imports becomes exports in the right version nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from zluda_runner.binfmt.elf import read_elf
from zluda_runner.devtools.standin import build_release, libs_from_profile
from zluda_runner.inspection.inspect import inspect_path
from zluda_runner.release.layout import scan_release_dir

CUBLAS = "libcublas.so.13"


def test_profile_to_release(apps, tmp_path: Path) -> None:
    profile = inspect_path(apps["rpath"], cache_dir=tmp_path)
    libs = {lib.name: lib for lib in libs_from_profile(profile)}
    assert set(libs) == {CUBLAS, "libcuda.so.1"}  # the driver is always there
    assert libs[CUBLAS].versions == {CUBLAS: ["cublasCreate_v2", "cublasSgemm_v2"]}
    release = build_release(list(libs.values()), tmp_path / "zluda", build_dir=tmp_path / "build")
    info = read_elf(release / CUBLAS)
    assert info.soname == CUBLAS and info.version_defs == [CUBLAS]
    exported = {(s.name, s.version) for s in info.exports}
    assert {("cublasCreate_v2", CUBLAS), ("cublasSgemm_v2", CUBLAS)} <= exported
    driver = read_elf(release / "libcuda.so.1")
    assert {"cuInit", "cuDriverGetVersion", "cuGetProcAddress_v2", "cuGetExportTable"} <= {
        s.name for s in driver.exports
    }
    assert (release / "libcuda.so").resolve() == (release / "libcuda.so.1").resolve()
    layout = scan_release_dir(release)
    assert {s.family for s in layout.shims} == {"driver", "cublas"}


def test_cli_spec_with_faults(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({
        "libcuda.so.1": {"soname": "libcuda.so.1"},
        CUBLAS: [CUBLAS, [CUBLAS], ["cublasCreate_v2", "cublasSgemm_v2"]],
        "libcufft.so.12": ["libcufft.so.12", ["libcufft.so.12"], ["cufftPlan1d"]],
    }))
    out = tmp_path / "zluda"
    subprocess.run(
        [sys.executable, "-m", "zluda_runner.devtools.standin", "--spec", str(spec), "--out", str(out),
         "--no-soname", CUBLAS, "--no-versions", "libcufft.so.12", "--drop", f"{CUBLAS}:cublasSgemm_v2"],
        check=True, capture_output=True, text=True,
    )
    cublas, cufft = read_elf(out / CUBLAS), read_elf(out / "libcufft.so.12")
    assert cublas.soname is None and cublas.version_defs == [CUBLAS]
    assert {s.name for s in cublas.exports} >= {"cublasCreate_v2"}
    assert "cublasSgemm_v2" not in {s.name for s in cublas.exports}
    assert cufft.soname == "libcufft.so.12" and cufft.version_defs == []
    assert ("cufftPlan1d", None) in {(s.name, s.version) for s in cufft.exports}
