#!/usr/bin/env bash
# Baseline on a machine with a real NVIDIA driver (about 1-2 minutes): the driver probe and a
# traced small CUDA program, JSON + HTML reports written to $OUT (default ./device-out).
# Every probe case should pass on real hardware: that is what a ZLUDA run is compared with.
#   OUT=/tmp/out scripts/device_check.sh
# Needs: python3 with this repo's dependencies (cffi, click, pyelftools, pefile), cc, and the
# pip package nvidia-cuda-runtime (real libcudart) for the traced client.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/device-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export ZLUDA_RUNNER_CACHE="$OUT/cache"
PY="${PYTHON:-python3}"

LIBCUDA="${LIBCUDA:-$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')}"
echo "driver: ${LIBCUDA:-none found}" | tee "$OUT/summary.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv >>"$OUT/summary.txt" 2>&1 || true
if [ -z "$LIBCUDA" ]; then echo "no libcuda.so.1 on this machine" | tee -a "$OUT/summary.txt"; exit 1; fi

# 1. driver API probe (per-case timeout 60 s; PTX JIT on first use)
timeout 300 "$PY" -m zluda_runner probe --libcuda "$LIBCUDA" --json --html "$OUT/probe.html" \
    >"$OUT/probe.json" 2>"$OUT/probe.err"
echo "probe exit: $?" | tee -a "$OUT/summary.txt"
"$PY" - "$OUT/probe.json" <<'PYEOF' | tee -a "$OUT/summary.txt"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as exc:
    print("probe.json unreadable:", exc); sys.exit(0)
print("probe summary:", r.get("summary"), "load:", (r.get("load") or {}).get("status"))
for c in r.get("cases", []):
    if c["status"] != "pass":
        print("  not passing:", c["id"], c["status"], c.get("detail", "")[:200])
cov = r.get("coverage") or {}
print("symbol coverage:", cov.get("present"), "/", cov.get("reference"), "missing e.g.", cov.get("missing", [])[:10])
PYEOF

# 2. a traced CUDA runtime client (real libcudart over the real driver) through our interposer
timeout 120 "$PY" - "$LIBCUDA" "$OUT" <<'PYEOF' 2>&1 | tee -a "$OUT/summary.txt"
import os, sys
from pathlib import Path
import nvidia
from zluda_runner.core.native import compile_c
from zluda_runner.trace import run_traced
from zluda_runner.report.trace_sections import trace_html
real, out = Path(sys.argv[1]), Path(sys.argv[2])
cudart = next(p for b in nvidia.__path__ for p in sorted(Path(b).glob("cu*/lib/libcudart.so.*")) if p.name.count(".") == 2)
fx = Path("tests/fixtures/probe")
client = compile_c([fx / "cudart_client.c"], "cudart_client", out / "build", shared=False,
                   args=[str(cudart), f"-Wl,-rpath,{cudart.parent}"])
direct = compile_c([fx / "bench_client.c"], "bench_client", out / "build", shared=False, args=["-ldl"])
report = run_traced([str(client), "fork"], os.environ, real_libcuda=real, out_dir=out / "trace-raw")
(out / "trace.json").write_text(report.to_json())
(out / "trace.html").write_text(trace_html(report))
found = sum(1 for x in report.proc_address_lookups if x.found)
print(f"trace: exit {report.exit_code}, {len(report.processes)} processes, {report.total_calls} calls, "
      f"{found} lookups found, {len(report.export_tables)} export tables, warnings {report.warnings}")
for c in report.calls:
    if c.failures:
        print("  failing call:", c.function, c.results)
# overhead on the real driver: cuDriverGetVersion through the interposer vs direct
import subprocess
from zluda_runner.trace.interposer import build_interposer, interposer_env
ip = build_interposer(Path(os.environ["ZLUDA_RUNNER_CACHE"]))
plain = subprocess.run([str(direct), "2000000"], capture_output=True, text=True, env=dict(os.environ))
traced = subprocess.run([str(direct), "2000000"], capture_output=True, text=True,
                        env=interposer_env(ip, real, out / "trace-raw", os.environ))
print("ns/call untraced:", plain.stdout.strip() or plain.returncode, "traced:", traced.stdout.strip() or traced.returncode)
PYEOF
# 3. PyTorch's OpInfo ops on the GPU against the CPU (native: no ZLUDA, the baseline on NVIDIA)
timeout 300 "$PY" -m zluda_runner --python "$PY" probe --torch --native --device cuda --dtypes float32,float16 \
    --budget 240 --json --html "$OUT/opinfo.html" >"$OUT/opinfo.json" 2>"$OUT/opinfo.err"
echo "opinfo exit: $? $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("summary"))' "$OUT/opinfo.json" 2>&1)" \
    | tee -a "$OUT/summary.txt"
echo "reports in $OUT"
