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
from zluda_runner.abtest.compare import compare_output, summarise
from zluda_runner.abtest.model import AbReport, Output, RunResult, SideSummary
from zluda_runner.abtest.run import ab_import_dir, read_records, run_ab
from zluda_runner.abtest.sides import default_side_a, split_command
from zluda_runner.cli import main_group
from zluda_runner.core.errors import HostError
from zluda_runner.core.settings import Settings
from zluda_runner.report.ab_view import render_html

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
    assert report.verdict and "DISAGREE" not in report.verdict


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
    assert any("side B" in p and "2/2" in p and "boom" in p for p in report.problems)  # which, how often, why
    assert {c.status for c in report.outputs} == {"missing_in_b"}
    assert report.agree is False


def test_shape_names_and_nothing_recorded(recorder: list[str]) -> None:
    shape = run_ab([*recorder, "shape"], [*recorder, "same"], runs=1)
    logits = next(c for c in shape.outputs if c.name == "logits")
    assert logits.status == "shape_mismatch" and logits.shape_a == (4,) and logits.shape_b == (6,)
    renamed = run_ab([*recorder, "renamed"], [*recorder, "same"], runs=1)
    statuses = {c.name: c.status for c in renamed.outputs}
    assert statuses["other"] == "missing_in_b" and statuses["logits"] == "missing_in_a"
    silent = run_ab([*recorder, "silent"], [*recorder, "same"], runs=1)
    assert silent.problems[0].startswith("side A") and "ab.record" in silent.problems[0]  # which, the fix
    assert {c.status for c in silent.outputs} == {"missing_in_a"}


def test_missing_command_is_a_failed_side(recorder: list[str], tmp_path: Path) -> None:
    report = run_ab([str(tmp_path / "no-such-program")], recorder, runs=1)
    assert report.runs[0].error.startswith("command not found")


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
    page = html.read_text()
    assert "Verdict: " in page and 'class="report"' in page  # the shared report renderer's page
    differ = runner.invoke(
        main_group, ["ab", "--runs", "1", "--a-cmd", cmd + " planted", "--b-cmd", cmd + " same"]
    )
    assert differ.exit_code == 3 and "DISAGREE" in differ.output
    ab = ["ab", "--a-cmd", cmd, "--b-cmd", cmd]
    crash = runner.invoke(main_group, ["--json", *ab[:-1], cmd + " crash", "--runs", "1"])
    assert crash.exit_code == 3 and "Traceback" not in crash.output
    problems = json.loads(crash.stdout)["problems"]
    assert any(all(d in p for d in ("side B", "1/1", "exit code 3", "boom")) for p in problems)
    missing_b = runner.invoke(main_group, ["ab", "--", "script.py"])
    assert missing_b.exit_code == 1 and "--b-python" in missing_b.output
    bad_html = runner.invoke(main_group, ["--json", *ab, "--html", str(tmp_path / "no" / "x.html")])
    error = json.loads(bad_html.stdout)
    assert (bad_html.exit_code, error["kind"]) == (1, "output-file")
    assert str(tmp_path / "no") in error["error"]  # the folder that is not there
    bad_timeout = runner.invoke(main_group, ["ab", "--a-cmd", cmd, "--b-cmd", cmd, "--timeout", "0"])
    assert bad_timeout.exit_code == 2 and "Invalid value for '--timeout'" in bad_timeout.output  # click's


# Side A's workload: records one output, and leaves the loader path it saw in a file.
UNDER_ZLUDA = textwrap.dedent(
    """
    import os, sys
    from zluda_runner import ab
    with open(sys.argv[1], "a") as fh:
        fh.write(os.environ.get("LD_LIBRARY_PATH", "") + "\\n")
    ab.record("values", [1.5, 2.5])
    """
)


def test_default_side_a_runs_the_script_under_zluda(
    standin_release: Path, pywrap: Path, launch_env: dict[str, str], tmp_path: Path
) -> None:
    script, seen = tmp_path / "workload.py", tmp_path / "seen.txt"
    script.write_text(UNDER_ZLUDA)
    settings = Settings(zluda_dir=standin_release, cache_dir=tmp_path / "cache")
    a_argv = default_side_a([str(script), str(seen)], str(pywrap), settings)
    assert a_argv[a_argv.index("run") :] == ["run", "--", str(pywrap), str(script), str(seen)]
    report = run_ab(a_argv, [sys.executable, str(script), str(seen)], runs=1, env=launch_env)
    assert report.agree is True and not report.problems, report.problems
    under_a, under_b = seen.read_text().splitlines()
    # A ran through `zluda-run run`: the plan's link folder leads the loader path; B ran as is
    cache = str(tmp_path / "cache")
    assert under_a.split(":")[0].startswith(cache) and cache not in under_b


def test_compare_is_dtype_aware_and_counts_argmax() -> None:
    def out(values: list[float], dtype: str = "float32", shape: list[int] | None = None) -> Output:
        return Output("logits", dtype, tuple(shape or [len(values)]), tuple(values))

    close = compare_output(out([1.0, 2.004]), out([1.0, 2.0]))
    assert close.status == "differ" and close.max_abs_error == pytest.approx(4e-3)  # float32: too far
    assert (close.rtol, close.atol) == (1e-3, 1e-3)  # torch's cross-device tolerance
    half = compare_output(out([1.0, 2.004], "bfloat16"), out([1.0, 2.0], "bfloat16"))
    assert half.status == "agree" and (half.rtol, half.atol) == (1.6e-2, 1e-3)
    mixed = compare_output(out([1.0, 2.004], "bfloat16"), out([1.0, 2.0], "float32"))
    assert mixed.status == "agree"  # the looser of the two dtypes
    ints = compare_output(out([1, 2], "int64"), out([1, 3], "int64"))
    assert ints.status == "differ" and ints.rtol == 0.0 and ints.max_abs_error == 1.0
    nan = compare_output(out([float("nan"), 1.0]), out([float("nan"), 1.0]))
    assert nan.status == "agree"
    one_nan = compare_output(out([float("nan"), 1.0]), out([0.0, 1.0]))
    assert one_nan.status == "differ" and one_nan.mismatched == 1
    zero_ref = compare_output(out([0.5]), out([0.0]))
    assert zero_ref.max_rel_error is None and zero_ref.max_abs_error == 0.5
    rows = compare_output(out([0, 1, 5, 0, 3, 1], shape=[2, 3]), out([0, 1, 2, 4, 3, 1], shape=[2, 3]))
    assert rows.argmax_agreement == 0.5  # row 0: index 2 on both; row 1: index 1 on A, 0 on B
    override = compare_output(out([1.0, 2.0005]), out([1.0, 2.0]), rtol=0.0, atol=1e-4)
    assert override.status == "differ" and override.atol == 1e-4


def test_timing_summary_and_verdict() -> None:
    a_times, b_times = [4.0, 2.0, 3.0], [1.0, 1.5, 1.0]
    runs = tuple(RunResult(side, i + 1, 0, 10.0, timings={"generate": (samples[i],), "load": (0.1,)})
                 for i in range(3) for side, samples in (("A", a_times), ("B", b_times)))
    ran = AbReport(a=SideSummary("A", ("a",)), b=SideSummary("B", ("b",)), runs=runs)
    report = summarise(ran, {"A": {}, "B": {}}, None, None)
    assert ran.timings == () and ran.verdict == ""  # a new report: the one given is not changed
    assert (report.a.runs, report.b.runs, report.runs) == (3, 3, runs)
    generate = next(t for t in report.timings if t.name == "generate")
    assert (generate.a.median_s, generate.a.min_s, generate.a.max_s, generate.a.samples) == (3.0, 2.0, 4.0, 3)
    assert (generate.b.median_s, generate.b.min_s, generate.b.max_s) == (1.0, 1.0, 1.5)
    assert generate.ratio_a_over_b == 3.0 and generate.faster == "B"
    load = next(t for t in report.timings if t.name == "load")
    assert load.faster == "same"
    # the verdict speaks of the longest region, and says plainly that nothing was compared
    assert "3.00x" in report.verdict and "'generate'" in report.verdict  # the ratio, the region
    assert report.faster == "B" and report.agree is None and report.outputs == ()
    assert "generate" in render_html(report)


def test_split_command_never_uses_a_shell() -> None:
    assert split_command("python 'my script.py' --x 1;rm") == ["python", "my script.py", "--x", "1;rm"]
    with pytest.raises(HostError):
        split_command("python 'unclosed")


def test_api_is_inert_without_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ab.AB_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # first: a relative write would land here
    assert not ab.enabled()
    ab.record("x", [1.0])
    ab.record("logits", [[0.5, 1.5]], logits=True)
    with ab.timer("t"):
        pass
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(ab.AB_DIR_ENV, str(tmp_path / "out"))
    ab.record("x", [1, 2])
    with ab.timer("t"):
        pass
    ab.record("grid", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    outputs, timings, problems = read_records(tmp_path / "out")
    assert outputs["x"].values == (1.0, 2.0) and outputs["x"].dtype == "int64"
    assert outputs["grid"].shape == (2, 3) and outputs["grid"].values[-1] == 6.0
    assert len(timings["t"]) == 1 and not problems
    with pytest.raises(TypeError):
        ab.record("bad", object())
    with pytest.raises(TypeError, match="rectangular"):
        ab.record("ragged", [[1.0], [1.0, 2.0]])


def test_api_outside_ab_loads_nothing_and_prints_nothing() -> None:
    env = {k: v for k, v in os.environ.items() if k != ab.AB_DIR_ENV}
    code = (
        "import sys\n"
        "from zluda_runner import ab\n"
        "ab.record('x', [1.0]); ab.record('y', 2)\n"
        "with ab.timer('t'):\n    pass\n"
        "heavy = ('json', 'array', 'torch')\n"
        "print(sorted(m for m in sys.modules if m in heavy or m.startswith('zluda_runner.abtest')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "[]\n", "")


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
    assert comparisons["product"].dtype_a == "float32" and comparisons["product"].shape_a == (32, 32)
    assert comparisons["logits"].status == "agree" and comparisons["logits"].argmax_agreement == 1.0
