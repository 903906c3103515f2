"""warmup (heartbeat, cache growth, run under ZLUDA) and the examples, run on CPU at small sizes."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.abtest.conftest import launch_env, standin_release  # noqa: F401  (a stand-in release, a clean env)
from tests.golden import assert_golden
from zluda_runner.abtest.run import run_ab
from zluda_runner.cli import main_group
from zluda_runner.core.errors import CommandNotFoundError, HostError
from zluda_runner.core.settings import Settings
from zluda_runner.launch.warmup import warmup, zluda_run_argv

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Fills a fake compile cache, says so through a "ready" file, then waits for the runner's
# heartbeat to answer (a "go" file), so nothing depends on how fast anything runs.
WORKLOAD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    cache, ready, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "zluda.db").write_bytes(b"k" * 4096)
    ready.touch()
    while not go.exists():
        time.sleep(0.01)
    sys.exit(7)
    """
)


def test_warmup_reports_cache_growth_and_heartbeats(tmp_path: Path) -> None:
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    cache = tmp_path / "cache" / "zluda" / "ComputeCache"
    ready, go = tmp_path / "ready", tmp_path / "go"
    seen: list[tuple[float, int, int]] = []

    def beat(elapsed: float, cache_bytes: int, grown: int) -> None:
        seen.append((elapsed, cache_bytes, grown))
        if ready.exists():
            go.touch()

    argv = [sys.executable, str(script), str(cache), str(ready), str(go)]
    report = warmup(argv, None, [cache], heartbeat_s=0.05, on_heartbeat=beat)
    assert report.exit_code == 7
    assert report.heartbeats == len(seen) >= 1
    # every beat saw the workload still running; the one that released it saw the cache grown
    assert (seen[-1][1], seen[-1][2]) == (4096, 4096)
    assert [s[0] for s in seen] == sorted(s[0] for s in seen) and report.elapsed_s >= seen[-1][0]
    assert (report.bytes_before, report.bytes_after, report.grew_bytes, report.grew_files) == (
        0,
        4096,
        4096,
        1,
    )
    assert report.to_dict()["grew_bytes"] == 4096


def test_warmup_bad_input(tmp_path: Path) -> None:
    with pytest.raises(CommandNotFoundError):
        warmup([str(tmp_path / "nope")], None, [tmp_path])
    with pytest.raises(HostError):
        warmup([], None, [tmp_path])
    with pytest.raises(HostError):
        warmup(["true"], None, [tmp_path], heartbeat_s=0)
    result = CliRunner().invoke(
        main_group,
        ["warmup", "--as-is", "--json", "--", sys.executable, "-c", "raise SystemExit(5)"],
        env={"XDG_CACHE_HOME": str(tmp_path)},
    )
    assert result.exit_code == 5
    data = json.loads(result.stdout)
    assert (data["exit_code"], data["schema"], data["grew_bytes"]) == (5, 1, 0)
    empty = CliRunner().invoke(main_group, ["warmup", "--as-is", "--"])
    assert empty.exit_code != 0 and "Traceback" not in empty.output


def test_zluda_run_argv_hands_on_the_global_options(tmp_path: Path) -> None:
    settings = Settings(zluda_dir=tmp_path / "z", release="v6", cache_dir=tmp_path / "c", force=True)
    argv = zluda_run_argv(["python", "x.py", "--a"], settings)
    assert argv[:3] == [sys.executable, "-m", "zluda_runner"]
    assert argv[-5:] == ["run", "--", "python", "x.py", "--a"]
    options = argv[3:-5]
    assert options[options.index("--zluda-dir") + 1] == str(tmp_path / "z")
    assert options[options.index("--release") + 1] == "v6"
    assert options[options.index("--cache-dir") + 1] == str(tmp_path / "c")
    assert "--force" in options and "--manifest" not in options and "--python" not in options


def test_warmup_runs_the_command_under_zluda(standin_release: Path, launch_env,  # noqa: F811
                                             tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    cache = tmp_path / "cache"
    args = ["--cache-dir", str(cache), "--zluda-dir", str(standin_release), "warmup", "--"]
    workload = ["sh", "-c", 'printf "%s" "$LD_LIBRARY_PATH" > "$0"; exit 4', str(seen)]
    proc = subprocess.run(
        [sys.executable, "-m", "zluda_runner", *args, *workload],
        env=launch_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 4, proc.stderr
    assert re.search(r"warmup: sh exited 4 after [0-9.]+ s; compile cache grew by", proc.stdout)
    # the workload saw the loader set-up of `zluda-run run`: the plan's link folder comes first
    assert seen.read_text().split(":")[0].startswith(str(cache))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, check=False)


# Runs infer.main three times in one interpreter where `zluda_runner` cannot be imported.
INFER_TWICE = textwrap.dedent(
    """
    import sys
    sys.modules["zluda_runner"] = None  # as in a python without zluda-runner installed
    sys.path.insert(0, sys.argv[1])
    import infer
    small = ["--device", "cpu", "--tokens", "16", "--layers", "1", "--dim", "32"]
    for seed in ("0", "0", "1"):
        assert infer.main([*small, "--seed", seed]) == 0
    try:
        infer.main(["--device", "cpu", "--dim", "30", "--heads", "4"])
    except SystemExit as exc:
        print("SystemExit", exc.code)
    """
)


def test_infer_example_generates_varied_deterministic_text_on_cpu() -> None:
    proc = _run("-c", INFER_TWICE, str(EXAMPLES))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("generated 16 tokens") == 3 and "tokens/s" in proc.stdout
    lines = proc.stdout.splitlines()
    texts = [ast.literal_eval(line.split(": ", 1)[1]) for line in lines if line.startswith("output: ")]
    assert len(texts) == 3 and all(len(t) == 16 for t in texts)
    assert texts[0] == texts[1]  # seeded: the same text every time
    assert texts[0] != texts[2]  # and the seed matters
    # greedy decoding of a random model must not collapse onto one token
    assert all(len(set(t)) >= 6 for t in texts), texts
    cli = _run(str(EXAMPLES / "infer.py"), "--device", "cpu", "--tokens", "2", "--layers", "1", "--dim", "16")
    assert cli.returncode == 0 and "generated 2 tokens" in cli.stdout, cli.stderr
    assert "SystemExit 2" in proc.stdout.splitlines()  # argparse's exit for bad input, and its words:
    assert_golden("example_infer_bad_heads", proc.stderr.splitlines()[-1] + "\n")  # --dim, --heads named


def test_infer_example_under_ab_records_logits_and_tokens() -> None:
    infer = [sys.executable, str(EXAMPLES / "infer.py"), "--device", "cpu", "--tokens", "4"]
    small = ["--layers", "1", "--dim", "32"]
    report = run_ab([*infer, *small], [*infer, *small], runs=1)
    outputs = {c.name: c for c in report.outputs}
    assert set(outputs) == {"logits", "tokens"} and report.agree is True, report.verdict
    assert outputs["logits"].shape_a == (1, 4, 95) and outputs["logits"].argmax_agreement == 1.0
    assert outputs["tokens"].dtype_a == "int64" and outputs["tokens"].rtol == 0.0
    assert [t.name for t in report.timings] == ["generate"]


def test_matmul_check_example_on_cpu() -> None:
    proc = _run(str(EXAMPLES / "matmul_check.py"), "--size", "64")
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("  ")]
    dtypes = ("float32", "float16", "bfloat16", "float64")
    assert [(row[0], row[-1]) for row in rows] == [(d, "ok") for d in dtypes]  # each within its bound
    # the view whole, each error and bound as <n> (the figures are the CPU's, not the view's)
    assert_golden("example_matmul_check_cpu", re.sub(r"\d\.\d{3}e[+-]\d\d", "<n>", proc.stdout))
    no_gpu = _run(str(EXAMPLES / "matmul_check.py"), "--device", "cuda", "--size", "8")
    assert no_gpu.returncode == 2 and no_gpu.stdout == ""
    assert_golden("example_matmul_check_no_cuda", no_gpu.stderr.splitlines()[-1] + "\n")  # torch sees none


def test_warmup_reports_zluda_runs_own_failure_not_the_workloads(tmp_path: Path) -> None:
    """The release and plan are prepared before the workload starts: their failure is zluda-run's
    own error (message, hint, exit 1), never "python exited 1"."""
    result = CliRunner().invoke(
        main_group,
        ["--cache-dir", str(tmp_path / "c"), "--zluda-dir", str(tmp_path / "missing"), "warmup", "--",
         "sh", "-c", "exit 0"],
    )
    assert result.exit_code == 1
    assert "error:" in result.output and "hint:" in result.output
    assert "exited" not in result.output and str(tmp_path / "missing") in result.output
