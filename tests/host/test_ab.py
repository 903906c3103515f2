"""ab: the in-workload API and the A/B runner with plain CPU commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner import ab
from zluda_runner.abrun import ab_import_dir, read_records, run_ab, split_command
from zluda_runner.cli import main_group
from zluda_runner.errors import HostError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# A workload that records what its arguments say; no torch, so each run is fast.
RECORDER = textwrap.dedent(
    """
    import sys
    from zluda_runner import ab

    mode = sys.argv[1] if len(sys.argv) > 1 else "same"
    if mode == "crash":
        print("boom: simulated driver failure", file=sys.stderr)
        sys.exit(3)
    if mode == "silent":
        sys.exit(0)
    values = [1.0, 2.0, -3.0, 4.0, 0.5, 6.0]
    if mode == "planted":
        values[3] += 0.25
    with ab.timer("work"):
        total = sum(v * v for v in values)
    ab.record("logits" if mode != "renamed" else "other", values if mode != "shape" else values[:4])
    ab.record("count", 6)
    ab.record("total", total)
    """
)


@pytest.fixture()
def recorder(tmp_path: Path) -> list[str]:
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER)
    return [sys.executable, str(script)]


def test_identical_sides_agree(recorder: list[str]) -> None:
    report = run_ab([*recorder, "same"], [*recorder, "same"], runs=2)
    assert [(r.side, r.index) for r in report.runs] == [("A", 1), ("B", 1), ("A", 2), ("B", 2)]
    assert report.agree is True and not report.problems
    assert {c.name: c.status for c in report.outputs} == {
        "count": "agree",
        "logits": "agree",
        "total": "agree",
    }
    work = next(t for t in report.timings if t.name == "work")
    assert work.a.samples == 2 and work.b.samples == 2 and work.ratio_a_over_b is not None
    assert "outputs agree" in report.verdict


def test_planted_difference_is_detected_with_its_max_error(recorder: list[str]) -> None:
    report = run_ab([*recorder, "planted"], [*recorder, "same"], runs=1)
    logits = next(c for c in report.outputs if c.name == "logits")
    assert logits.status == "differ"
    assert logits.max_abs_error == 0.25
    assert logits.max_rel_error == pytest.approx(0.25 / 4.0)
    assert logits.mismatched == 1 and logits.elements == 6
    assert logits.argmax_agreement == 1.0  # 4.25 vs 4.0: the largest stays index 5 (6.0)
    total = next(c for c in report.outputs if c.name == "total")
    assert total.max_abs_error == pytest.approx(4.25**2 - 16.0)
    assert report.agree is False and "DISAGREE" in report.verdict


def test_failing_side_is_reported_not_raised(recorder: list[str]) -> None:
    report = run_ab([*recorder, "same"], [*recorder, "crash"], runs=2)
    assert report.b.failed_runs == 2 and report.a.failed_runs == 0
    assert any("side B failed in 2/2" in p and "boom" in p for p in report.problems)
    assert {c.status for c in report.outputs} == {"missing_in_b"}
    assert report.agree is False


def test_shape_names_and_nothing_recorded(recorder: list[str]) -> None:
    shape = run_ab([*recorder, "shape"], [*recorder, "same"], runs=1)
    logits = next(c for c in shape.outputs if c.name == "logits")
    assert logits.status == "shape_mismatch" and logits.shape_a == [4] and logits.shape_b == [6]
    renamed = run_ab([*recorder, "renamed"], [*recorder, "same"], runs=1)
    statuses = {c.name: c.status for c in renamed.outputs}
    assert statuses["other"] == "missing_in_b" and statuses["logits"] == "missing_in_a"
    silent = run_ab([*recorder, "silent"], [*recorder, "same"], runs=1)
    assert any("side A recorded nothing" in p for p in silent.problems)


def test_missing_command_is_a_failed_side(recorder: list[str], tmp_path: Path) -> None:
    report = run_ab([str(tmp_path / "no-such-program")], recorder, runs=1)
    assert report.runs[0].error.startswith("command not found")
    with pytest.raises(HostError):
        run_ab(recorder, recorder, runs=0)


def test_cli_ab_json_html_and_exit_codes(recorder: list[str], tmp_path: Path) -> None:
    runner = CliRunner()
    cmd = " ".join(f'"{part}"' for part in recorder)
    html = tmp_path / "ab.html"
    same = runner.invoke(
        main_group,
        ["ab", "--runs", "1", "--a-cmd", cmd, "--b-cmd", cmd, "--json", "--html", str(html), "--", "same"],
    )
    assert same.exit_code == 0, same.output
    data = json.loads(same.stdout)
    assert data["schema"] == 1 and data["agree"] is True
    assert "Verdict" in html.read_text()
    differ = runner.invoke(
        main_group, ["ab", "--runs", "1", "--a-cmd", cmd + " planted", "--b-cmd", cmd + " same"]
    )
    assert differ.exit_code == 3 and "DISAGREE" in differ.output
    missing_b = runner.invoke(main_group, ["ab", "--", "script.py"])
    assert missing_b.exit_code == 1 and "--b-python" in missing_b.output


def test_split_command_never_uses_a_shell() -> None:
    assert split_command("python 'my script.py' --x 1;rm") == ["python", "my script.py", "--x", "1;rm"]
    with pytest.raises(HostError):
        split_command("python 'unclosed")


def test_api_is_inert_without_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ab.AB_DIR_ENV, raising=False)
    assert not ab.enabled()
    ab.record("x", [1.0])
    with ab.timer("t"):
        pass
    monkeypatch.chdir(tmp_path)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(ab.AB_DIR_ENV, str(tmp_path / "out"))
    ab.record("x", [1, 2])
    with ab.timer("t"):
        pass
    outputs, timings, problems = read_records(tmp_path / "out")
    assert outputs["x"].values == [1.0, 2.0] and outputs["x"].dtype == "int64"
    assert len(timings["t"]) == 1 and not problems
    with pytest.raises(TypeError):
        ab.record("bad", object())


def test_import_dir_keeps_zluda_run_working_on_side_a(tmp_path: Path) -> None:
    folder = ab_import_dir(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(folder)}
    version = subprocess.run(
        [sys.executable, "-m", "zluda_runner", "--version"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert version.returncode == 0 and "zluda-run" in version.stdout
    isolated = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); from zluda_runner import ab; print(ab.enabled())",
            str(folder),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert isolated.stdout.strip() == "False"


def test_ab_demo_records_tensors_and_finds_the_offset() -> None:
    demo = [sys.executable, str(EXAMPLES / "ab_demo.py"), "--size", "32", "--repeat", "2"]
    report = run_ab([*demo, "--offset", "0.5"], demo, runs=1)
    comparisons = {c.name: c for c in report.outputs}
    assert comparisons["product"].status == "differ"
    assert comparisons["product"].max_abs_error == pytest.approx(0.5, abs=1e-4)
    assert comparisons["product"].dtype_a == "float32" and comparisons["product"].shape_a == [32, 32]
    assert comparisons["logits"].status == "agree" and comparisons["logits"].argmax_agreement == 1.0
