"""warmup (heartbeat, cache growth) and the examples, run on CPU at small sizes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from zluda_runner.cli import main_group
from zluda_runner.errors import CommandNotFoundError
from zluda_runner.warmup import warmup

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Fills a fake compile cache, then waits for the runner's first heartbeat (a file the
# heartbeat callback creates), so the test does not depend on how fast anything runs.
WORKLOAD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    cache, go = Path(sys.argv[1]), Path(sys.argv[2])
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "zluda.db").write_bytes(b"k" * 4096)
    while not go.exists():
        time.sleep(0.01)
    sys.exit(7)
    """
)


def test_warmup_reports_cache_growth_and_heartbeats(tmp_path: Path) -> None:
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    cache = tmp_path / "cache" / "zluda" / "ComputeCache"
    go = tmp_path / "go"
    seen: list[tuple[float, int]] = []

    def beat(elapsed: float, cache_bytes: int) -> None:
        seen.append((elapsed, cache_bytes))
        go.touch()

    report = warmup(
        [sys.executable, str(script), str(cache), str(go)], None, [cache], heartbeat_s=0.05, on_heartbeat=beat
    )
    assert report.exit_code == 7
    assert report.heartbeats >= 1 and seen
    assert (report.bytes_before, report.bytes_after, report.grew_bytes, report.grew_files) == (
        0,
        4096,
        4096,
        1,
    )
    assert report.to_dict()["grew_bytes"] == 4096


def test_warmup_missing_command_and_cli_exit_code(tmp_path: Path) -> None:
    with pytest.raises(CommandNotFoundError):
        warmup([str(tmp_path / "nope")], None, [tmp_path])
    result = CliRunner().invoke(
        main_group, ["warmup", "--json", "--", sys.executable, "-c", "raise SystemExit(5)"]
    )
    assert result.exit_code == 5
    assert json.loads(result.stdout)["exit_code"] == 5


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, check=False)


def test_infer_example_generates_on_cpu() -> None:
    proc = _run(
        str(EXAMPLES / "infer.py"), "--device", "cpu", "--tokens", "4", "--layers", "1", "--dim", "32"
    )
    assert proc.returncode == 0, proc.stderr
    assert "generated 4 tokens" in proc.stdout and "tokens/s" in proc.stdout


def test_matmul_check_example_on_cpu() -> None:
    proc = _run(str(EXAMPLES / "matmul_check.py"), "--size", "64")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(" ok") == 4 and "all dtypes within bounds" in proc.stdout
    no_gpu = _run(str(EXAMPLES / "matmul_check.py"), "--device", "cuda", "--size", "8")
    assert no_gpu.returncode == 2 and "no CUDA device" in no_gpu.stderr
