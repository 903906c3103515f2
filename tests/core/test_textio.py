"""Our streams never raise on a character they cannot encode."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.core.textio import Sink, make_safe, visible

PATH = "C:\\Users\\Дмитрий\\AppData\\Local\\キャッシュ"


def test_a_code_page_pipe_is_switched_to_utf8() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="cp1252")
    with pytest.raises(UnicodeEncodeError):  # what a Windows pipe does without us
        stream.write(PATH)
        stream.flush()
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="cp1252")
    make_safe(stream)  # type: ignore[arg-type]
    stream.write(PATH + "\n")
    stream.flush()
    assert raw.getvalue().decode("utf-8") == PATH + "\n"


def test_a_unicode_stream_keeps_its_encoding_and_replaces_what_it_cannot_write() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-16-le")
    make_safe(stream)  # type: ignore[arg-type]
    assert stream.encoding == "utf-16-le"
    stream.write("ok \udcff\n")  # a lone surrogate (an undecodable file name): replaced, not raised
    stream.flush()
    assert raw.getvalue().decode("utf-16-le") == "ok ?\n"


HOSTILE = "\x1b]0;owned\x07 \x1b]52;c;cm0gLXJmIH4=\x07 \x9b31m \u202egpj \x00 \r"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _main(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """zluda-run as its entry point runs it (its streams made sinks): exit code, stdout + stderr."""
    from zluda_runner.cli import main

    runner = CliRunner()
    with runner.isolation(env=env) as (out, err, *_):
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        sys.stdout.flush()
        sys.stderr.flush()
        text = out.getvalue().decode() + err.getvalue().decode()
    return code, text


def test_a_hostile_gpu_name_from_a_root_tree_reaches_no_terminal_raw(tmp_path: Path) -> None:
    """On 7859508 doctor printed the KFD node's name (an OSC title, an OSC 52 clipboard write) raw."""
    from tests.doctor.test_doctor import _write, rocm62_tree

    rocm62_tree(tmp_path, gfx_nodes=[(110000, 96, 24 << 30)], tensile_for=["gfx1100"])
    _write(tmp_path, "sys/class/kfd/kfd/topology/nodes/1/name", HOSTILE + "\n")
    cache = ["--cache-dir", str(tmp_path / "c")]
    for argv, env in (([*cache, "doctor", "--root", str(tmp_path)], {}),
                      ([*cache, "doctor"], {"ZLUDA_RUNNER_ROOT": str(tmp_path)})):
        _, text = _main(argv, env)
        assert "\\x1b]52;c;" in text and not RAW.search(text), text
    _, text = _main([*cache, "--json", "doctor", "--root", str(tmp_path)], {})
    assert json.loads(text)["facts"]["gpus"][0]["name"] == HOSTILE.strip()  # JSON: its own escapes, once


def test_the_monitor_line_of_a_hostile_device_is_escaped_by_the_sink() -> None:
    from zluda_runner.report.telemetry_view import render_monitor
    from zluda_runner.telemetry.model import GpuTrace

    trace = GpuTrace(device=HOSTILE, backend="amdgpu-sysfs", interval_s=0.2, vram_total=None,
                     vram_before=None, vram_after=None, samples=(), duration_s=1.0)
    raw = io.BytesIO()
    sink = Sink(io.TextIOWrapper(raw, encoding="utf-8"))  # type: ignore[arg-type]
    sink.write(render_monitor(trace) + "\n")
    sink.flush()
    shown = raw.getvalue().decode()
    assert "\\x1b]0;owned\\x07" in shown and not RAW.search(shown), shown


def test_visible_keeps_ordinary_text_and_is_idempotent() -> None:
    plain = "torch 2.4.1+cu118 · 97% — ünïcödé 漢字\nnext"
    assert visible(plain, newlines=True) == plain
    once = visible(HOSTILE + "\ta\nb")
    assert not RAW.search(once) and "\n" not in once and visible(once) == once


def test_an_error_of_two_lines_keeps_its_break_and_escapes_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    import zluda_runner.cli as cli
    from zluda_runner.core.errors import ZludaRunnerError

    def boom(**_: object) -> None:
        raise ZludaRunnerError("first line\nsecond \x1b]0;t\x07 line", hint="a hint")

    monkeypatch.setattr(cli.main_group, "main", boom)
    code, text = _main([], {"COLUMNS": "80"})
    assert code != 0 and "error: first line\nsecond \\x1b]0;t\\x07 line\nhint: a hint" in text, text
