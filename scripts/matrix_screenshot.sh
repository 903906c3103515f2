#!/usr/bin/env bash
# Render the results matrix HTML in headless Chromium and save a PNG of it.
#
#   scripts/matrix_screenshot.sh [OUT.png]        (default: matrix.png in the current folder)
#
# Needs Debian's `chromium` package (apt-get install chromium). Plants a known set of runs
# (2 releases x 2 GPU targets x 2 torch builds, with failing torch ops and one A/B that
# disagrees) in a throw-away SQLite store, writes the page with
# `zluda-run results matrix --html` and screenshots it; then checks in the same browser that a filter hides the other rows. PYTHON (default: python3) must import zluda_runner.
set -euo pipefail

out="$(realpath -m "${1:-matrix.png}")"
python="${PYTHON:-python3}"
chrome="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$chrome" ]; then
    echo "error: chromium not found; install Debian's package: apt-get install chromium" >&2
    exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$python" - "$work/results.db" <<'PY'
import sys
from pathlib import Path

from zluda_runner.core.settings import Settings
from zluda_runner.probe.model import KIND_TORCH, CaseResult, ProbeReport
from zluda_runner.results.recording import record_report
from zluda_runner.abtest.runner import AbReport, OutputComparison, SideSummary, TimingComparison, TimingStats

url = sys.argv[1]
settings = Settings(cache_dir=Path(url).parent)
OPS = ["matmul.fp16", "matmul.bf16", "addmm.fp16", "conv2d.fp16", "sdpa", "fft", "softmax", "layer_norm",
       "embedding", "cumsum", "topk", "random.seeded"]


def torch_ops(failing: set[str], error: str = "mismatch") -> ProbeReport:
    cases = [CaseResult(id=op, area="torch", title=op, status=error if op in failing else "pass",
                        detail="max abs err 3.1e-01 > atol 1e-02" if op in failing else "",
                        max_abs_err=0.31 if op in failing else 1e-4) for op in OPS]
    return ProbeReport(kind=KIND_TORCH, cases=cases)


def ab(slow: float, agree: bool) -> AbReport:
    a, b = TimingStats(5, slow, slow, slow), TimingStats(5, 1.0, 1.0, 1.0)
    return AbReport(a=SideSummary("A", []), b=SideSummary("B", []),
                    outputs=[OutputComparison("logits", "agree" if agree else "differ")],
                    timings=[TimingComparison("generate", a, b, slow, "B" if slow > 1.05 else "same")],
                    agree=agree, faster="B" if slow > 1.05 else "same")


fork, v6 = {"id": "fork-3.9.5"}, {"id": "upstream-v6"}
t118, t130 = {"torch_version": "2.4.1+cu118", "cuda_major": 11}, {"torch_version": "2.14.1+cu130", "cuda_major": 13}
rdna3 = {"gfx": "gfx1100", "gpu_name": "Radeon RX 7900 XTX"}
rdna2 = {"gfx": "gfx1030", "gpu_name": "Radeon RX 6800"}
driver = ProbeReport(cases=[CaseResult(id=c, area="driver", title=c, status=st, result_name=rn)
                            for c, st, rn in [("init.cuInit", "pass", "CUDA_SUCCESS"),
                                              ("memory.cuMemAlloc", "pass", "CUDA_SUCCESS"),
                                              ("module.cuModuleLoadData", "pass", "CUDA_SUCCESS"),
                                              ("graph.cuGraphCreate", "fail", "CUDA_ERROR_NOT_SUPPORTED")]])
plan = [
    ("probe", driver, fork, t118, rdna3),
    ("torch-ops", torch_ops({"sdpa"}), fork, t118, rdna3),
    ("ab", ab(1.25, True), fork, t118, rdna3),
    ("torch-ops", torch_ops({"addmm.fp16", "sdpa", "fft"}), fork, t118, rdna2),
    ("torch-ops", torch_ops({"fft"}, "error"), v6, t130, rdna3),
    ("ab", ab(1.02, False), v6, t130, rdna3),
    ("torch-ops", torch_ops(set()), v6, t130, rdna2),
]
for n, (kind, report, release, target, host) in enumerate(plan):
    out = record_report(kind, report, settings=settings, command=["zluda-run", kind], db_url=url,
                        release=release, target=target, host=host, started_at=f"2025-03-{n + 1:02d}T10:00:00.000000Z")
    if not out.recorded:
        sys.exit(out.warning)
PY

"$python" -m zluda_runner results --results-db "$work/results.db" matrix --html "$work/matrix.html"
"$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,700 \
    --screenshot="$out" "file://$work/matrix.html" 2>"$work/chromium.log" || {
    cat "$work/chromium.log" >&2
    exit 1
}
[ -s "$out" ] || { echo "error: chromium wrote no screenshot" >&2; cat "$work/chromium.log" >&2; exit 1; }
# The script runs in the browser too: a filter given in the link hides the other rows.
"$chrome" --headless --no-sandbox --disable-gpu --dump-dom "file://$work/matrix.html#filter=gfx1030" \
    >"$work/dom.html" 2>>"$work/chromium.log"
shown="$(grep -o '<tr class=[^>]*>' "$work/dom.html" | grep -vc 'display: none' || true)"
if [ "$shown" != "2" ]; then
    echo "error: filtering by gfx1030 in Chromium showed ${shown:-?} rows, expected 2" >&2
    exit 1
fi
echo "filter check: #filter=gfx1030 shows $shown of 4 rows in Chromium"
echo "screenshot: $out"
