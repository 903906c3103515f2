"""`zluda-run inspect` through click's test runner."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.inspection.collect import rule_text


def test_json_output(fake_torch, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        main_group, ["--cache-dir", str(tmp_path / "c"), "inspect", str(fake_torch.site_packages), "--json"],
        env={"LD_LIBRARY_PATH": str(fake_torch.extra_dir)},
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["schema"] == 1 and data["torch"]["cuda"] == "13.0"
    libs = {lib["name"]: lib for lib in data["libraries"]}
    assert libs["libcublas.so.13"]["resolved"]["via"] == "rpath"
    assert libs["libcublas.so.13"]["versions_required"] == ["libcublas.so.13"]
    assert libs["libcufft.so.12"]["resolved"]["via"] == "ld_library_path"
    assert all({"path", "format", "soname", "needed", "rpath", "runpath"} <= set(o) for o in data["objects"])


def test_table_output(fake_torch, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main_group, ["--cache-dir", str(tmp_path / "c"), "inspect", str(fake_torch.torch_dir)],
        env={"LD_LIBRARY_PATH": str(fake_torch.extra_dir)},
    )
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.startswith("cublas "))
    # family, needed, requested by, versions, syms, found by (rule_text of "rpath"), path; the view
    # whole, its per-object summary included, is golden inspect (tests/inspection/test_golden_views.py)
    assert re.split(r"\s{2,}", row.strip()) == [
        "cublas", "libcublas.so.13", "libtorch_cuda.so", "libcublas.so.13", "2",
        rule_text("rpath", "libtorch_cuda.so"), "<sp>/nvidia/cu13/lib/libcublas.so.13"]


def test_errors_have_hints_and_no_traceback(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main_group, ["--cache-dir", str(tmp_path), "inspect", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "error:" in result.output and "hint:" in result.output
    assert "Traceback" not in result.output
    result = runner.invoke(main_group, ["--json", "inspect", "--python", str(tmp_path / "nopython")])
    error = json.loads(result.output)
    assert result.exit_code == 1 and error["kind"] == "target", error
    assert str(tmp_path / "nopython") in error["error"], error
    result = runner.invoke(main_group, ["inspect", str(tmp_path), "--python", "python3"])
    assert result.exit_code == 2
