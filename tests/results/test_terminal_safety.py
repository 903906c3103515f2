"""Escape sequences from an imported bundle never reach the terminal (issue 20, nothing-lost item 9).

A bundle is someone else's data. On 5c673db its text went to the terminal as it was through
``results list/show/diff/matrix``: an OSC title change, an OSC 52 clipboard write, a screen clear,
``\\r`` overwriting a line, a C1 CSI. Here every view prints them as visible ``\\xNN``; these fail there.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from click.testing import CliRunner

from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.results.recording import build_run
from zluda_runner.results.schema import content_id

TITLE = "\x1b]0;owned\x07"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
CLEAR = "\x1b[2J\x1b[H"
CR = "ok\rFAIL"
CSI = "\x9b31m"
BIDI = "evil\u202egpj.exe"
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hostile_bundle(tmp_path: Path) -> tuple[Path, list[str]]:
    runs = []
    for day, failing in ((1, {1}), (2, {0, 1, 2})):
        report = reports.torch_ops(3, failing, tag=CLIPBOARD)
        hostile = tuple(dataclasses.replace(case, detail=f"{CLEAR} {CR} {BIDI}") for case in report.cases)
        report = dataclasses.replace(report, cases=hostile)
        run = build_run("torch-ops", report, command=["zluda-run", TITLE, "probe"],
                        host={**reports.HOST, "gfx": f"gfx1100{CSI}", "gpu_name": CLEAR},
                        started_at=f"2025-09-0{day}T10:00:00.000000Z",
                        release={"id": f"fork{TITLE}", "asset": CR}, target={"torch_version": f"2.4{CR}"})
        runs.append(run)
    ab = build_run("ab", reports.ab_report(1.2), command=["zluda-run", "ab"], host=reports.HOST,
                   started_at="2025-09-03T10:00:00.000000Z", release={"id": "fork"})
    ab.summary["verdict"] = f"agree{CLEAR}"
    ab = dataclasses.replace(ab, run_id=content_id(ab))
    runs.append(ab)
    path = tmp_path / "hostile.jsonl"
    path.write_text(json.dumps({"format": "zluda-runner-results", "version": 1}) + "\n"
                    + "".join(json.dumps({"run": r.to_dict()}) + "\n" for r in runs), encoding="utf-8")
    return path, [r.run_id for r in runs]


def _cli(tmp_path: Path, url: str, *args: str) -> str:
    result = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path / "c"), "--results-db", url,
                                             "results", *args])
    assert result.exit_code == 0 and result.exception is None, (result.output, result.exception)
    return result.output


def test_no_view_of_an_imported_bundle_sends_control_characters(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    path, (a, b, ab) = _hostile_bundle(tmp_path)
    assert "imported 3 run(s)" in _cli(tmp_path, url, "import", str(path))
    outputs = {
        "list": _cli(tmp_path, url, "list"),
        "show": _cli(tmp_path, url, "show", a[:12]),
        "diff": _cli(tmp_path, url, "diff", a[:12], b[:12]),
        "matrix": _cli(tmp_path, url, "matrix"),
        "show ab": _cli(tmp_path, url, "show", ab[:12]),
    }
    for view, text in outputs.items():
        assert not UNSAFE.search(text), (view, [c for c in UNSAFE.findall(text)][:5], text)
    assert "fork\\x1b]0;owned\\x07" in outputs["list"]  # shown, visibly, not acted on
    assert "agree\\x1b[2J" in outputs["list"]
    assert "\\x1b]52;c;" in outputs["show"] and "ok\\x0dFAIL" in outputs["show"]
    assert "evil\\u202egpj.exe" in outputs["show"] and "gfx1100\\x9b31m" in outputs["matrix"]
    assert "\\x1b]52;c;" in outputs["diff"]


def test_safe_text_keeps_ordinary_text_and_is_idempotent() -> None:
    from zluda_runner.core.textio import visible as safe_text

    plain = "torch 2.4.1+cu118 · 97% (97/100) — ünïcödé 漢字 ok"
    assert safe_text(plain) == plain
    hostile = f"{TITLE}{CLEAR}{CR}{CSI}{BIDI}\x00\x08\x7f\ttab\nnext"
    once = safe_text(hostile)
    assert not UNSAFE.search(once) and "\n" not in once and safe_text(once) == once
    assert safe_text("a\nb", newlines=True) == "a\nb"
