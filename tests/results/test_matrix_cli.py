"""The matrix (terminal and HTML), the per-GPU summaries, and the `zluda-run results` commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from tests.results import reports
from zluda_runner.cli import main_group
from zluda_runner.core.settings import Settings
from zluda_runner.report.matrix_html import render_html
from zluda_runner.report.results_view import render_matrix as render_text
from zluda_runner.results.backends import make_store
from zluda_runner.results.matrix import build_matrix
from zluda_runner.results.queries import failed_releases_for_gpu, summary_for_gpu
from zluda_runner.results.recording import record_report

V6 = {"id": "upstream-v6", "asset": "zluda-linux-abc123.tar.gz"}
TORCH_130 = {"torch_version": "2.14.1+cu130", "cuda_major": 13}
RDNA2 = {**reports.HOST, "gfx": "gfx1030", "gpu_name": "Radeon RX 6800"}


def plant(url: str, tmp_path: Path) -> None:
    """Two releases x two GPUs x two torch builds, with known failures."""
    settings = Settings(cache_dir=tmp_path)
    day = iter(range(1, 100))

    def rec(kind: str, report: object, release: dict, target: dict, host: dict) -> None:
        out = record_report(
            kind,
            report,
            settings=settings,
            command=["zluda-run", kind],
            db_url=url,
            release=release,
            target=target,
            host=host,
            started_at=f"2025-03-{next(day):02d}T09:00:00.000000Z",
        )
        assert out.recorded, out.warning

    fork, t118, rdna3 = reports.FORK, reports.TORCH_118, reports.HOST
    rec("torch-ops", reports.torch_ops(100, {1, 2, 3, 4, 5}), fork, t118, rdna3)  # older: 95 %
    rec("torch-ops", reports.torch_ops(100, {7, 8, 9}), fork, t118, rdna3)  # latest: 97 %
    rec("ab", reports.ab_report(1.2), fork, t118, rdna3)
    rec("torch-ops", reports.torch_ops(100, set(range(40))), fork, t118, RDNA2)  # 60 %
    rec("torch-ops", reports.torch_ops(50), V6, TORCH_130, rdna3)  # 100 %
    rec("ab", reports.ab_report(1.0, agree=False), V6, TORCH_130, rdna3)
    rec("doctor", reports.doctor_report(), V6, TORCH_130, rdna3)


def test_matrix_cells_take_the_latest_run_of_each_kind(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    plant(url, tmp_path)
    with make_store(url).open() as store:
        matrix = build_matrix(store)
    cells = {(c.release, c.gfx, c.torch): c for c in matrix.cells}
    assert set(cells) == {
        ("fork-3.9.5", "gfx1100", "2.4.1+cu118"),
        ("fork-3.9.5", "gfx1030", "2.4.1+cu118"),
        ("upstream-v6", "gfx1100", "2.14.1+cu130"),
    }
    fork = cells[("fork-3.9.5", "gfx1100", "2.4.1+cu118")]
    assert fork.torch_ops is not None and (fork.torch_ops.passed, fork.torch_ops.total) == (97, 100)
    assert fork.ab == "agree, B faster" and fork.runs == 3
    assert [f.item for f in fork.failing] == ["op007.fp16", "op008.fp16", "op009.fp16"]
    v6 = cells[("upstream-v6", "gfx1100", "2.14.1+cu130")]
    assert v6.ab == "differ, same speed" and [f.item for f in v6.failing] == ["output:logits"]
    text = render_text(matrix)
    assert re.search(r"fork-3\.9\.5\s+gfx1030\s+2\.4\.1\+cu118\s+-\s+60% \(60/100\)", text)
    assert matrix.runs == 7 and [len({getattr(c, axis) for c in matrix.cells}) for axis in
                                 ("release", "gfx", "torch")] == [2, 2, 2]  # the view's totals line


def test_matrix_html_is_self_contained_and_escapes(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    plant(url, tmp_path)
    record_report(
        "torch-ops",
        reports.torch_ops(2, {0}, tag="<script>alert(1)</script>"),
        settings=Settings(cache_dir=tmp_path),
        command=[],
        db_url=url,
        release={"id": "x<b>"},
    )
    with make_store(url).open() as store:
        page = render_html(build_matrix(store))
    assert page.count("<tr class=") == 4
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page and "x&lt;b&gt;" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # nothing fetched from a network
    assert "@import" not in page and "url(" not in page
    assert 'type="search"' in page and "3 failing: torch-ops " in page and "#filter=" in page


def test_summary_and_failed_releases_for_a_gpu(tmp_path: Path) -> None:
    url = str(tmp_path / "s" / "results.db")
    assert summary_for_gpu("gfx1100", db_url=url) == []  # no store yet: nothing known, nothing created
    assert not Path(url).exists()
    plant(url, tmp_path)
    lines = [s.text() for s in summary_for_gpu("gfx1100", db_url=url)]
    assert lines == [
        "upstream-v6 on gfx1100: 1 run, 100% of ops passing",
        "fork-3.9.5 on gfx1100: 2 runs, 96% of ops passing",
    ]
    failed = failed_releases_for_gpu("gfx1030", db_url=url)
    assert [(f.release, f.kind, f.failed) for f in failed] == [("fork-3.9.5", "torch-ops", 40)]
    assert failed[0].examples == ["op000.fp16", "op001.fp16", "op002.fp16"]
    assert {(f.release, f.kind) for f in failed_releases_for_gpu("gfx1100", db_url=url)} == {
        ("fork-3.9.5", "torch-ops"),
        ("upstream-v6", "ab"),
    }


def _cli(*args: str, tmp_path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main_group, ["--cache-dir", str(tmp_path / "cache"), "results", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_results_commands(tmp_path: Path, store_url: str) -> None:
    plant(store_url, tmp_path)
    code, out = _cli("--results-db", store_url, "list", "--json", tmp_path=tmp_path)
    assert code == 0
    runs = json.loads(out)["runs"]
    assert len(runs) == 7 and runs[0]["kind"] == "torch-ops"
    first, second = runs[0]["run_id"], runs[1]["run_id"]
    code, out = _cli("--results-db", store_url, "diff", first[:8], second[:8], "--json", tmp_path=tmp_path)
    diff = json.loads(out)
    assert code == 0 and (len(diff["newly_failing"]), len(diff["fixed"])) == (3, 5), out
    assert "op007.fp16" in {change["item"] for change in diff["newly_failing"]}, out
    code, out = _cli("--results-db", store_url, "show", second[:10], "--json", tmp_path=tmp_path)
    items = {item["item"]: item for item in json.loads(out)["run"]["items"]}
    op007 = items["op007.fp16"]
    assert code == 0 and (op007["status"], op007["ok"]) == ("mismatch", False), out
    html = tmp_path / "m.html"
    code, out = _cli("--results-db", store_url, "matrix", "--html", str(html), tmp_path=tmp_path)
    assert code == 0 and "fork-3.9.5" in out and html.read_text().startswith("<!DOCTYPE html>")
    bundle = tmp_path / "b.jsonl"
    assert _cli("--results-db", store_url, "export", str(bundle), tmp_path=tmp_path) == (
        0,
        f"exported 7 run(s) to {bundle}\n",
    )
    code, out = _cli("import", str(bundle), str(bundle), tmp_path=tmp_path)  # into the cache's SQLite
    assert (code, out) == (0, "imported 7 run(s); 7 already stored\n")
    assert (tmp_path / "cache" / "results.db").exists()


def test_results_command_errors_are_messages_not_tracebacks(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "results.db").write_bytes(b"junk" * 1000)
    junk = tmp_path / "cache" / "results.db"
    code, out = _cli("list", "--json", tmp_path=tmp_path)
    error = json.loads(out)
    assert code == 1 and error["kind"] == "results-store" and str(junk) in error["error"], out
    assert f"mv {junk} {junk}.bad" in error["hint"]  # the command that moves it aside
    code, out = _cli("list", tmp_path=tmp_path)
    assert code == 1 and out.startswith("error: ") and "Traceback" not in out
    code, out = _cli("--results-db", "mysql://db/x", "list", "--json", tmp_path=tmp_path)
    error = json.loads(out)
    assert code == 1 and error["kind"] == "results-store" and "'mysql://db/x'" in error["error"], out
    good = str(tmp_path / "good.db")
    make_store(good).open().close()  # a store, empty (a reader makes none)
    for prefix in ("zz", "abcd"):  # not hexadecimal; no such run
        code, out = _cli("--results-db", good, "show", prefix, "--json", tmp_path=tmp_path)
        error = json.loads(out)
        assert code == 1 and error["kind"] == "results-store" and prefix in error["error"], out
    assert good in error["error"]  # the store it looked in
    code, out = _cli("--results-db", good, "show", "zz", "--json", tmp_path=tmp_path)
    assert "'zz'" in json.loads(out)["error"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    code, out = _cli("--results-db", good, "import", str(bad), tmp_path=tmp_path)
    assert code == 1 and "line 1" in out


def test_results_list_has_a_header_and_the_failing_list_keeps_whole_names(tmp_path: Path,
                                                                           monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Issue 20, newcomer item 7 (on 5c673db: no header row; the failing list cut at 100 columns,
    mid-name)."""
    from zluda_runner.report.results_view import RUN_HEADER, render_runs

    url = str(tmp_path / "s" / "results.db")
    plant(url, tmp_path)
    with make_store(url).open() as store:
        matrix = build_matrix(store)
        runs = store.list_runs()
    listing = render_runs(runs, url).splitlines()
    assert listing[0].split()[:2] == [RUN_HEADER[0], RUN_HEADER[1].split()[0]] and "result" in listing[0]
    assert listing[0].index("release") == listing[1].index(runs[0].release_id)  # columns line up
    names = {f.item for c in matrix.cells for f in c.failing}
    for width in (60, 80):
        text = render_text(matrix, width=width)
        failing = text.split("failing (latest run of each kind):", 1)[1].split("\n\n", 1)[0]
        assert all(len(line) <= width for line in failing.strip("\n").splitlines())
        for line in failing.strip("\n").splitlines():  # each name shown is a whole failing name
            shown = line.split(": ", 1)[1] if ": " in line else line
            tokens = [t.strip(" ,…") for t in shown.split(", ")]
            assert all(t in names for t in tokens if t), (width, line)
