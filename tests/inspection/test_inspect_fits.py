"""`zluda-run inspect` fits the terminal (issue 20, newcomer item 7): at 80 and 120 columns no line is
wider, and every library name and path is whole on one line (it split ``libcuda.s``/``o.1``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.inspection.collect import rule_text

NAMES = ["libcudart.so.13", "libcublas.so.13", "libcufft.so.12", "libcudnn.so.9", "libcuda.so.1",
         "libnvidia-ml.so.1", "libtorch_cuda.so", "libc10_cuda.so", "<sp>/nvidia/cu13/lib/libcudart.so.13"]


@pytest.mark.parametrize("width", [80, 120])
def test_inspect_fits_and_breaks_no_name(fake_torch, tmp_path: Path, width: int) -> None:
    out = CliRunner().invoke(
        main_group, ["--cache-dir", str(tmp_path / "c"), "inspect", str(fake_torch.torch_dir)],
        env={"LD_LIBRARY_PATH": str(fake_torch.extra_dir), "COLUMNS": str(width)},
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    wide = [line for line in lines if len(line) > width and " " in line.strip()]
    assert not wide, "\n".join(wide) + "\n---\n" + out.output
    extra = str(fake_torch.extra_dir)
    joined = "".join(line.strip() for line in lines)  # a path wider than the line is broken after a /
    for name in [*NAMES, f"{extra}/libcufft.so.12", f"{extra}/libcuda.so.1"]:
        whole = re.compile(rf"(?<![\w./-]){re.escape(name)}(?![\w.-])")
        if "/" in name and len(name) > width // 2:
            assert name in joined, f"{name} is not there, whole or broken after a /:\n{out.output}"
        else:
            assert any(whole.search(line) for line in lines), f"{name} not whole:\n{out.output}"
    # the found-by cell (cuBLAS's DT_RPATH of libtorch_cuda.so) folds at its blanks only
    assert rule_text("rpath", "libtorch_cuda.so") in " ".join(out.output.split())


def test_piped_inspect_keeps_a_row_on_one_line(fake_torch, tmp_path: Path) -> None:
    out = CliRunner().invoke(
        main_group, ["--cache-dir", str(tmp_path / "c"), "inspect", str(fake_torch.torch_dir)],
        env={"LD_LIBRARY_PATH": str(fake_torch.extra_dir), "COLUMNS": None},
    )
    row = next(line for line in out.output.splitlines() if line.startswith("cufft "))
    assert "libcufft.so.12" in row and f"{fake_torch.extra_dir}/libcufft.so.12" in row
