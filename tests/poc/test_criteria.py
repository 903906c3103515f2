"""Each criterion judged on made-up runs (a pure function), and the views of the report."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

from tests.golden import assert_golden
from zluda_runner.abtest.model import OutputComparison
from zluda_runner.poc.model import PocRun, Thresholds, Timing
from zluda_runner.poc.session import PocRequest, judge
from zluda_runner.report.poc_html import plots, render_poc_html
from zluda_runner.report.poc_view import render_lines
from zluda_runner.telemetry.model import GpuSample, GpuTrace

GIB = 1024**3
AGREE = (OutputComparison(name="logits", status="agree", dtype_a="float16", dtype_b="float32",
                          max_abs_error=0.01, rtol=0.01, atol=0.05, elements=10),)


def _trace(before: int, after: int, busy: float = 70.0) -> GpuTrace:
    samples = (GpuSample(0.0, 0.0, before, 20.0, 40.0), GpuSample(0.2, busy, before + GIB, 180.0, 60.0),
               GpuSample(0.4, busy / 2, before + GIB, 150.0, 61.0))
    return GpuTrace("card1 (RX 7900 XTX)", "amdgpu-sysfs", 0.2, 16 * GIB, before, after, samples,
                    duration_s=0.5)


def _run(index: int, seconds: float, trace: GpuTrace | None = None, **kw: object) -> PocRun:
    run = PocRun(side="zluda", index=index, argv=("python", "x.py"), exit_code=0, wall_s=1.0,
                 outputs=("logits", "tokens"), tokens=20, timings=(Timing("generate", (seconds,)),),
                 comparisons=AGREE, trace=trace, gpu=trace.summary() if trace else None)
    return replace(run, **kw)  # type: ignore[arg-type]


REFERENCE = (PocRun(side="reference", index=1, argv=("python", "x.py"), exit_code=0, wall_s=2.0,
                    outputs=("logits", "tokens"), tokens=20, timings=(Timing("generate", (2.0,)),)),)


def _judge(runs: list[PocRun], available: bool = True, **kw: object) -> dict[str, tuple[str, str]]:
    thresholds = Thresholds(**kw)  # type: ignore[arg-type]
    request = PocRequest(command=("python", "x.py"), runs=len(runs), thresholds=thresholds)
    report = judge(request, runs, REFERENCE, telemetry="amdgpu-sysfs, card1", telemetry_available=available)
    return {c.name: (c.status, c.summary) for c in report.criteria}


def _why(runs: list[PocRun], name: str, available: bool = True) -> tuple[str, str, tuple[int, ...]]:
    """Criterion ``name``'s (status, cause, runs) for ``runs``."""
    request = PocRequest(command=("python", "x.py"), runs=len(runs))
    found = judge(request, runs, REFERENCE, telemetry="amdgpu-sysfs, card1", telemetry_available=available)
    criterion = found.criterion(name)
    return criterion.status, criterion.cause, criterion.runs


def test_all_pass_and_the_first_run_is_apart_from_the_speed() -> None:
    runs = [_run(1, 9.0, _trace(GIB, GIB)), _run(2, 0.5, _trace(GIB, GIB)), _run(3, 0.5, _trace(GIB, GIB))]
    judged = _judge(runs)
    assert {name: status for name, (status, _) in judged.items()} == dict.fromkeys(judged, "pass")
    # runs 2 and 3 (0.5 s) against the reference's 2 s: 4x; run 1's 9 s (compiling) does not count
    assert judged["speed"][1] == "generate: 0.5 s, 40.0 tokens/s, 4.00x the reference (at least 1x)"


def test_vram_held_after_a_run_fails_stable_even_without_growth() -> None:
    runs = [_run(1, 0.5, _trace(GIB, GIB)), _run(2, 0.5, _trace(GIB, 2 * GIB)),
            _run(3, 0.5, _trace(GIB, GIB))]
    status, summary = _judge(runs)["stable"]
    assert status == "fail" and summary == "VRAM not back to baseline after runs [2]"
    # within the tolerance (the larger of 256 MiB and 2% of 16 GiB) it passes
    small = [_run(1, 0.5, _trace(GIB, GIB + 300 * 1024**2)), _run(2, 0.5, _trace(GIB, GIB))]
    assert _judge(small)["stable"][0] == "pass"


def test_an_idle_gpu_fails_on_the_gpu() -> None:
    idle = _trace(GIB, GIB, busy=2.0)
    idle = replace(idle, samples=tuple(replace(s, vram_used=GIB) for s in idle.samples))
    assert _why([_run(1, 0.5, idle), _run(2, 0.5, _trace(GIB, GIB))], "on the GPU") == ("fail", "idle", (1,))


def test_speed_below_what_is_needed_and_no_region() -> None:
    assert _judge([_run(1, 4.0)], available=False)["speed"][0] == "fail"  # 0.5x the CPU
    assert _judge([_run(1, 4.0)], available=False, min_speedup=0.5)["speed"][0] == "pass"
    assert _why([_run(1, 1.0, timings=())], "speed", available=False) == ("fail", "no-region", ())


def test_missing_outputs_and_a_failed_reference_fail_right() -> None:
    missing = (OutputComparison(name="tokens", status="missing_in_a"),)
    assert _judge([_run(1, 1.0, comparisons=missing)], available=False)["right"][0] == "fail"
    request = PocRequest(command=("python", "x.py"))
    broken = (replace(REFERENCE[0], exit_code=1, error="exit code 1"),)
    report = judge(request, [_run(1, 1.0)], broken, telemetry="none", telemetry_available=False)
    assert report.criterion("right").summary.startswith("the reference did not run (exit code 1)")


def test_views_show_every_criterion_and_plot_each_run() -> None:
    runs = [_run(1, 9.0, _trace(GIB, GIB)), _run(2, 0.5, _trace(GIB, GIB))]
    request = PocRequest(command=("python", "x.py"), runs=2)
    report = judge(request, runs, REFERENCE, telemetry="amdgpu-sysfs, card1", telemetry_available=True)
    assert report.verdict == "pass" and all(c.passed and not c.cause for c in report.criteria), report
    assert_golden("poc-criteria-all-pass", "\n".join(render_lines(report)) + "\n")  # each one, its evidence
    busy, vram, power = plots(report)
    assert [s.label for s in busy.series] == ["run 1 (compiles)", "run 2"]
    assert busy.series[0].points == ((0.0, 0.0), (0.2, 70.0), (0.4, 35.0))
    assert vram.series[1].points[1] == (0.2, 2.0) and vram.marks == ((16.0, "total 16 GiB"),)
    assert power.y_label == "power (W)"
    page = render_poc_html(report)
    assert page.count("<svg") == 3 and "Verdict: PASS" in page
    for chunk in page.split("<svg")[1:]:
        svg = "<svg" + chunk[: chunk.index("</svg>") + 6]
        ET.fromstring(svg)  # noqa: S314 -- our own output, not untrusted data


def test_a_run_the_telemetry_read_nothing_of_is_not_called_idle() -> None:
    """A GPU that stopped answering (its sysfs files gone: unplugged, the driver reset) or a run over
    before the first sample shows nothing: 'stayed idle: did torch see no device?' blamed torch."""
    unanswered = tuple(replace(s, busy_percent=None, vram_used=None) for s in _trace(GIB, GIB).samples)
    blind = replace(_trace(GIB, GIB), vram_before=None, vram_after=None, samples=unanswered)
    status, summary = _judge([_run(1, 0.5, blind), _run(2, 0.5, _trace(GIB, GIB))])["on the GPU"]
    assert status == "fail"
    assert summary.startswith("not shown: the telemetry read no busy or VRAM value while runs [1] ran")
    unseen = [_run(1, 0.5, None), _run(2, 0.5, _trace(GIB, GIB))]
    assert _why(unseen, "on the GPU") == ("fail", "unread", (1,))
    idle = replace(_trace(GIB, GIB, busy=2.0), samples=tuple(replace(s, busy_percent=2.0, vram_used=GIB)
                                                             for s in _trace(GIB, GIB).samples))
    assert _why([_run(1, 0.5, blind), _run(2, 0.5, idle)], "on the GPU") == ("fail", "idle", (2,))
