"""The verdict over real runs of a tiny workload (natively: no ZLUDA), with telemetry from a fake amdgpu
sysfs tree that the workload itself updates while it runs."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.poc.conftest import WORKLOAD
from tests.telemetry.fake_sysfs import GIB, FakeCard, card_device
from zluda_runner import Options, get_result, list_results
from zluda_runner.api.poc import run_poc
from zluda_runner.core.argcheck import MAX_RUNS, ArgumentValueError
from zluda_runner.core.errors import HostError
from zluda_runner.poc.model import PocReport

MIB = 1024 * 1024


def _poc(args: list[str], root: Path | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
         **kw: object) -> PocReport:
    monkeypatch.delenv("POC_PLANT", raising=False)
    options = Options(cache_dir=tmp_path / "cache", results_db=str(tmp_path / "results.db"))
    return run_poc([sys.executable, str(WORKLOAD), *args], native=True, options=options, root=root,
                   interval=0.005, **kw)  # type: ignore[arg-type]


def test_every_criterion_passes_when_the_gpu_is_used_and_released(
    gpu_root: tuple[Path, FakeCard], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, card = gpu_root
    device = card_device(root, card.card)
    report = _poc(["--gpu", str(device)], root, monkeypatch, tmp_path, runs=3, min_speedup=0.0)
    assert [c.name for c in report.criteria] == ["ran", "right", "on the GPU", "stable", "speed"]
    assert [c.status for c in report.criteria] == ["pass"] * 5, [c.summary for c in report.criteria]
    assert report.verdict == "pass" and report.exit_code == 0
    assert [r.index for r in report.runs] == [1, 2, 3] and len(report.reference_runs) == 1
    for run in report.runs:
        assert run.gpu is not None and run.gpu.busy_peak == 60.0 and run.gpu.vram_peak == GIB + 512 * MIB
        assert run.trace is not None and run.trace.vram_after == GIB
    gpu = report.criterion("on the GPU")
    assert any("60%" in e for e in gpu.evidence)  # the busy peak the card showed
    speed = report.criterion("speed")
    assert "runs [2, 3]" in speed.evidence[0] and "run 1 (compiles)" in speed.evidence[1]
    # the JSON round-trips to the same report
    assert PocReport.from_json(report.to_json()) == report
    # recorded in the results store like every run: one item per criterion
    options = Options(cache_dir=tmp_path / "cache", results_db=str(tmp_path / "results.db"))
    (stored,) = list_results(options, kind="poc")
    items = {i.item: (i.status, i.ok) for i in get_result(stored.run_id or "", options).items}
    assert items == {f"criterion:{name}": ("pass", True) for name in ("ran", "right", "on the GPU", "stable",
                                                                       "speed")}
    assert stored.summary["verdict"] == "pass" and stored.summary["runs"] == 3


def test_vram_growing_run_after_run_fails_stable(
    gpu_root: tuple[Path, FakeCard], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, card = gpu_root
    device = card_device(root, card.card)
    report = _poc(["--gpu", str(device), "--leak", str(300 * MIB)], root, monkeypatch, tmp_path, runs=3,
                  min_speedup=0.0)
    stable = report.criterion("stable")
    assert stable.status == "fail"
    assert [r.trace.vram_after for r in report.runs if r.trace] == [GIB + 300 * MIB * i for i in (1, 2, 3)]
    assert any("1.9 GiB" in e and "900.0 MiB" in e for e in stable.evidence)  # after run 3, and what is held
    assert report.criterion("on the GPU").passed and report.criterion("ran").passed
    assert report.verdict == "fail" and report.exit_code == 3


def test_a_planted_wrong_output_fails_right(
    gpu_root: tuple[Path, FakeCard], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, _ = gpu_root
    monkeypatch.setenv("POC_PLANT", "1")
    options = Options(cache_dir=tmp_path / "cache", results_db=str(tmp_path / "results.db"))
    report = run_poc([sys.executable, str(WORKLOAD)], runs=2, native=True, options=options, root=root,
                     min_speedup=0.0)
    right = report.criterion("right")
    assert right.status == "fail" and "2 of 2" in right.summary
    assert any(e.startswith("run 1: values") and "0.25" in e and "1/6" in e for e in right.evidence)
    assert any(e.startswith("run 2: values") for e in right.evidence)
    statuses = {c.name: c.status for c in report.runs[0].comparisons}
    assert statuses == {"values": "differ", "count": "agree", "total": "agree"}
    assert report.criterion("ran").passed and report.exit_code == 3


def test_no_telemetry_fails_on_the_gpu_with_the_reason(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    empty = tmp_path / "bare"
    empty.mkdir()
    report = _poc([], empty, monkeypatch, tmp_path, runs=1, min_speedup=0.0)
    gpu = report.criterion("on the GPU")
    assert gpu.status == "fail" and any("amdgpu" in e for e in gpu.evidence) and "amdgpu" in report.telemetry
    stable = report.criterion("stable")
    assert stable.passed and stable.cause == "vram-unchecked" and gpu.cause == "no-telemetry", report.criteria
    assert all(r.trace is None for r in report.runs)
    assert [c.status for c in report.criteria if c.name != "on the GPU"] == ["pass"] * 4


def test_a_failing_run_fails_ran_and_stable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    report = _poc(["--fail"], None, monkeypatch, tmp_path, runs=2)
    ran = report.criterion("ran")
    assert ran.status == "fail" and ran.summary == "2 of 2 runs failed"
    assert report.criterion("stable").status == "fail"
    assert report.runs[0].exit_code == 5 and report.runs[0].error == "exit code 5"


def test_bad_requests_raise_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ArgumentValueError) as bad:
        run_poc(["true"], runs=0, native=True)
    assert bad.value.message.startswith("run_poc(runs=...) ") and str(MAX_RUNS) in bad.value.message  # bounds
    assert bad.value.hint == "see help(zluda_runner.run_poc)"
    with pytest.raises(HostError) as empty:
        run_poc([], native=True)
    assert "poc -- python" in (empty.value.hint_for("command line") or "")  # what to give
    with pytest.raises(HostError, match="'python \"unclosed'"):  # the text that would not split
        run_poc(["true"], reference='python "unclosed', native=True)


def test_a_reference_command_is_run_as_given_and_asks_half_its_speed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    reference = f'"{sys.executable}" "{WORKLOAD}" --leak 0'
    report = _poc([], None, monkeypatch, tmp_path, runs=1, reference=reference)
    assert report.reference_runs[0].argv == (sys.executable, str(WORKLOAD), "--leak", "0")
    assert report.reference == shlex.join([sys.executable, str(WORKLOAD), "--leak", "0"])
    assert report.criterion("right").passed
    assert report.criterion("speed").evidence[-1].endswith("(needed: 0.5x)")
    # without CUDA_VISIBLE_DEVICES="" the reference is a side under test too: a planted error on both agrees
    monkeypatch.setenv("POC_PLANT", "1")
    options = Options(cache_dir=tmp_path / "cache", results_db=str(tmp_path / "results.db"))
    both = run_poc([sys.executable, str(WORKLOAD)], runs=1, native=True, options=options, reference=reference)
    assert both.criterion("right").passed
