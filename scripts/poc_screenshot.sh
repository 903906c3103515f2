#!/usr/bin/env bash
# Render a `zluda-run poc` HTML report in headless Chromium and save a PNG of it.
#
#   scripts/poc_screenshot.sh [OUT.png]        (default: poc_report.png in the current folder)
#
# Needs Debian's `chromium` package (apt-get install chromium), a C compiler, and a PYTHON (default:
# python3) that imports zluda_runner, torch and transformers (the 'examples' extra).
#
# The verdict is real: `zluda-run poc --runs 3 --reference cpu -- python examples/llama_infer.py`
# through a stand-in ZLUDA release (its libcuda answers the loader; torch runs on the CPU). A machine
# without an AMD GPU has no telemetry, so the GPU the plots show is SIMULATED: a fake amdgpu sysfs tree
# (ZLUDA_RUNNER_ROOT) that a wrapper updates while the Llama runs (busy ~80%, about 1.2 GiB more VRAM,
# the first run "compiling" for a second at lower load). The page names the tree it read; on a real
# card, leave ZLUDA_RUNNER_ROOT unset and drop the wrapper.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${1:-poc_report.png}")"
python="${PYTHON:-python3}"
chrome="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$chrome" ]; then
    echo "error: chromium not found; install Debian's package: apt-get install chromium" >&2
    exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# a stand-in release and the ELF launcher that stands in for a CUDA build of python
echo '{"libcuda.so.1": {"soname": "libcuda.so.1"}}' >"$work/spec.json"
"$python" -m zluda_runner.devtools.standin --spec "$work/spec.json" --out "$work/zluda" >/dev/null
cc -O1 -o "$work/pywrap" "$repo/tests/fixtures/host/pywrap.c"

# the simulated card: 16 GiB, 1 GiB used, idle
dev="$work/root/sys/class/drm/card1/device"
mkdir -p "$dev/hwmon/hwmon0" "$dev/drm/card1" "$dev/drm/renderD128"
printf 'DRIVER=amdgpu\nPCI_SLOT_NAME=0000:03:00.0\n' >"$dev/uevent"
echo $((16 << 30)) >"$dev/mem_info_vram_total"
echo $((1 << 30)) >"$dev/mem_info_vram_used"
echo 0 >"$dev/gpu_busy_percent"
echo 18000000 >"$dev/hwmon/hwmon0/power1_average"
echo 45000 >"$dev/hwmon/hwmon0/temp1_input"

cat >"$work/sim_gpu.py" <<'PY'
"""Run the command after it; while it runs, make the fake card look busy (not on the CPU reference)."""
import math, os, random, subprocess, sys, threading, time
from pathlib import Path

dev = Path(os.environ["POC_SIM_DEVICE"])
def put(name, value):
    path = dev / name; tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(f"{int(value)}\n"); os.replace(tmp, path)
if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
    sys.exit(subprocess.call([sys.executable, *sys.argv[1:]]))
count = dev / ".runs"; run = int(count.read_text()) + 1 if count.exists() else 1; count.write_text(str(run))
base, stop = int((dev / "mem_info_vram_used").read_text()), threading.Event()
rng = random.Random(run)
def load():
    t0 = time.monotonic()
    while not stop.wait(0.05):
        t = time.monotonic() - t0
        if run == 1 and t < 1.0:  # compiling: light load, little memory
            busy, vram = 20 + 10 * rng.random(), base + 0.3 * 2**30
        else:
            busy = 80 + 8 * math.sin(t * 1.3 + run) + 6 * rng.uniform(-1, 1)
            vram = base + min(1.0, t / 0.8) * 1.2 * 2**30
        put("gpu_busy_percent", busy); put("mem_info_vram_used", vram)
        put("hwmon/hwmon0/power1_average", (40 + 2.2 * busy) * 1e6)
threading.Thread(target=load, daemon=True).start()
if run == 1:  # the first run compiles its kernels: a second at lower load before the work
    time.sleep(1.0)
code = subprocess.call([sys.executable, *sys.argv[1:]])
stop.set(); time.sleep(0.1)
put("gpu_busy_percent", 0); put("mem_info_vram_used", base); put("hwmon/hwmon0/power1_average", 18e6)
sys.exit(code)
PY

PYWRAP_PYTHON="$python" ZLUDA_RUNNER_ROOT="$work/root" POC_SIM_DEVICE="$dev" XDG_CACHE_HOME="$work/xdg" \
    "$python" -m zluda_runner --zluda-dir "$work/zluda" --cache-dir "$work/cache" --no-record \
    poc --runs 3 --reference cpu --interval 0.05 --html "$work/poc.html" -- \
    "$work/pywrap" "$work/sim_gpu.py" "$repo/examples/llama_infer.py" --tokens 32 || true
[ -s "$work/poc.html" ] || { echo "error: zluda-run poc wrote no HTML report" >&2; exit 1; }
"$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1500 \
    --screenshot="$out" "file://$work/poc.html" 2>"$work/chromium.log" || {
    cat "$work/chromium.log" >&2
    exit 1
}
[ -s "$out" ] || { echo "error: chromium wrote no screenshot" >&2; cat "$work/chromium.log" >&2; exit 1; }
cp "$work/poc.html" "${out%.png}.html"
echo "report: ${out%.png}.html"
echo "screenshot: $out"
