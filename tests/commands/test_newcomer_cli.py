"""Issue 29, a newcomer's fifth bullet: on 7859508 `trace-report F --html H` wrote H without saying so,
`run --injector` on Linux was silently ignored and `releases --gpu rx7900` was taken without a word.
(`poc --help` fitting 80 columns: tests/commands/test_fits_a_terminal.py walks every command's --help.)"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.core.test_textio import _main
from zluda_runner import list_releases, prepare_launch
from zluda_runner.cli import main_group
from zluda_runner.core.errors import UsageFault
from zluda_runner.core.exitcodes import USAGE


def test_trace_report_says_where_it_wrote_the_page(tmp_path: Path) -> None:
    (tmp_path / "p_1").mkdir()
    (tmp_path / "p_1" / "log.txt").write_text("cuInit(flags: 0) -> CUDA_SUCCESS\n")
    page = tmp_path / "out" / "trace.html"
    page.parent.mkdir()
    code, text = _main(["trace-report", str(tmp_path / "p_1"), "--html", str(page)], {"COLUMNS": "200"})
    assert code == 0, text
    assert page.is_file() and "<html" in page.read_text().lower()
    assert str(page) in text.splitlines()[-1]  # said last, whole


def test_ab_says_where_it_wrote_the_page(tmp_path: Path) -> None:
    page = tmp_path / "ab.html"
    side = f"{sys.executable} -c pass"
    code, text = _main(["ab", "--runs", "1", "--a-cmd", side, "--b-cmd", side, "--html", str(page)],
                       {"COLUMNS": "200"})
    assert code == 3, text  # neither side recorded anything
    assert page.is_file() and str(page) in text


def test_run_injector_off_windows_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    out = CliRunner().invoke(main_group, ["--json", "run", "--injector", "--", sys.executable, "-c", "pass"])
    doc = json.loads(out.output)
    assert out.exit_code == USAGE and (doc["kind"], doc["exit_code"]) == ("usage", USAGE)
    with pytest.raises(UsageFault):  # the API says it too
        prepare_launch([sys.executable, "-c", "pass"], injector=True)


@pytest.mark.parametrize("gpu", ["rx7900", "7900xtx", "gfx", "gfx11000x"])
def test_releases_gpu_must_be_a_gfx_name(tmp_path: Path, gpu: str) -> None:
    out = CliRunner().invoke(main_group, ["--json", "--cache-dir", str(tmp_path), "releases", "--gpu", gpu])
    doc = json.loads(out.output)
    assert out.exit_code == USAGE and doc["kind"] == "usage", out.output
    assert re.search(r"--gpu gfx[0-9a-f]{3,4}\b", doc["hint"])  # the form, by example
    with pytest.raises(UsageFault):
        list_releases(gpu=gpu)


def test_a_gfx_name_is_taken_in_any_case(tmp_path: Path) -> None:
    listing = list_releases(gpu="GFX1100", os="linux", hip="6.2", cuda=12)
    assert listing.report.selection is not None and listing.report.selection.constraints.gfx == "gfx1100"
