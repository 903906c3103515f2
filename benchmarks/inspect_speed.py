"""How fast is a full inspection of a CUDA torch install? Prints figures; asserts nothing.

    python benchmarks/inspect_speed.py PYTHON | SITE_PACKAGES
    python benchmarks/inspect_speed.py --smoke [PYTHON | SITE_PACKAGES]

PYTHON is an interpreter with a CUDA build of torch (e.g. a venv with torch==2.14.1), or give its
site-packages folder. ``--smoke`` (seconds: CI checks that it runs) reads a small tree instead: the
files under 2 MB of that torch/lib (default: this interpreter's torch, a CPU build will do) in a
temporary site-packages whose torch says it is a CUDA build.

Files: every .so in torch/lib plus every library under site-packages/nvidia that the loader model
binds them to. Each run is one fresh process with a warm page cache (a warm-up pass runs first).
Figures are CPU time (user + sys, so that machine load does not blur them), the median of 9 runs
(3 with ``--smoke``): "work" is the reading alone, after the imports; "process" the whole child,
interpreter start and imports included.

1. floors: readelf -dV --dyn-syms -W on each file (output discarded); and what a warm inspection
   cannot avoid: a stat of each file and one read of the cache file
2. ours: zluda_runner.binfmt.elf.read_elf on every file (dynamic section, versions, all dynamic symbols)
3. pyelftools, lddtree-style: dynamic tags plus every .dynsym symbol with its version name (one run)
4. zluda_runner.inspection.inspect.inspect_path: cold (an empty file cache, filled by the run), then
   warm (the file cache filled), beside issue 28's goals for torch 2.14.1 cu130's torch/lib
   (<= 0.3 s cold, <= 0.05 s warm)
"""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

OURS = r"""
import sys, time, json
from zluda_runner.binfmt.elf import read_elf
files = json.load(open(sys.argv[1]))
t0 = time.process_time()
n = 0
for f in files:
    info = read_elf(f)
    n += len(info.imports) + len(info.exports)
print(json.dumps({"work": time.process_time() - t0, "symbols": n}))
"""

WARM_FLOOR = r"""
import sys, time, json, os
files = json.load(open(sys.argv[1]))
t0 = time.process_time()
for f in files:
    os.stat(f)
for cache in sys.argv[2:]:
    with open(cache, encoding="utf-8") as fh:
        json.load(fh)
print(json.dumps({"work": time.process_time() - t0}))
"""

PYELFTOOLS = r"""
import sys, time, json
t0 = time.process_time()
from elftools.elf.elffile import ELFFile
from elftools.elf.dynamic import DynamicSection
from elftools.elf.gnuversions import GNUVerSymSection, GNUVerNeedSection, GNUVerDefSection
files = json.load(open(sys.argv[1]))
n = 0
for f in files:
    with open(f, "rb") as fh:
        elf = ELFFile(fh)
        names = {}
        needed = []
        for sec in elf.iter_sections():
            if isinstance(sec, DynamicSection):
                for tag in sec.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(tag.needed)
            elif isinstance(sec, GNUVerNeedSection):
                for verneed, auxes in sec.iter_versions():
                    for aux in auxes:
                        names[aux["vna_other"]] = aux.name
            elif isinstance(sec, GNUVerDefSection):
                for verdef, auxes in sec.iter_versions():
                    names[verdef["vd_ndx"]] = next(iter(auxes)).name
        versym = next((s for s in elf.iter_sections() if isinstance(s, GNUVerSymSection)), None)
        dynsym = elf.get_section_by_name(".dynsym")
        for i, sym in enumerate(dynsym.iter_symbols()):
            ver = names.get(versym.get_symbol(i)["ndx"]) if versym is not None else None
            n += bool(sym.name) + (ver is not None) * 0
print(json.dumps({"work": time.process_time() - t0, "symbols": n}))
"""

INSPECT = r"""
import sys, time, json
from pathlib import Path
from zluda_runner.inspection.inspect import inspect_path
cache = Path(sys.argv[2]) if sys.argv[2] != "-" else None
t0 = time.process_time()
profile = inspect_path(Path(sys.argv[1]), cache_dir=cache)
print(json.dumps({"work": time.process_time() - t0, "libraries": len(profile.libraries)}))
"""


def site_packages_of(arg: str) -> Path:
    p = Path(arg)
    if p.is_dir():
        return p
    try:
        out = subprocess.run([arg, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise SystemExit(f"error: {arg} is neither a site-packages folder nor a Python that runs ({exc})\n"
                         "hint: pass the interpreter of a venv with a CUDA build of torch") from None
    site = Path(out)
    if not (site / "torch" / "lib").is_dir():
        raise SystemExit(f"error: no torch in {site}\nhint: pass an interpreter with a CUDA build of torch")
    return site


def smoke_site(site: Path, folder: Path) -> Path:
    """A site-packages in ``folder`` with the files under 2 MB of ``site``'s torch/lib and its _C extension
    (links) and a torch that says it is a CUDA 13.0 build; ``site``'s nvidia folder linked beside it."""
    lib = folder / "torch" / "lib"
    lib.mkdir(parents=True)
    for p in sorted([*(site / "torch").glob("_C*.so"), *(site / "torch" / "lib").glob("*.so*")]):
        if p.is_file() and p.stat().st_size < 2 * 2**20:
            (lib.parent / p.relative_to(site / "torch")).symlink_to(p.resolve())
    (folder / "torch" / "version.py").write_text("__version__ = '2.14.1+cu130'\ncuda = '13.0'\nhip = None\n")
    if (site / "nvidia").is_dir():
        (folder / "nvidia").symlink_to((site / "nvidia").resolve())
    return folder


def files_to_read(site: Path) -> list[str]:
    from zluda_runner.loader.glibc import LoaderEnv, LoaderModel

    torch_libs = sorted(p for p in (site / "torch" / "lib").glob("*.so*") if p.is_file())
    model = LoaderModel(LoaderEnv.from_host({}))
    wanted = {str(p.resolve()) for p in torch_libs}
    nvidia = str((site / "nvidia").resolve())
    for lib in torch_libs:
        for obj in model.load(lib).objects:
            real = str(Path(obj.path).resolve())
            if real.startswith(nvidia):
                wanted.add(real)
    return sorted(wanted)


def timed(argv: list[str]) -> tuple[float, dict]:
    """(CPU time of the child process, the JSON its last line prints)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    last = out.strip().splitlines()[-1] if out.strip() else "{}"
    return cpu, json.loads(last)


def median_of(runs: int, argv: list[str],
              before_each: Callable[[], None] = lambda: None) -> tuple[float, float]:
    """(median process CPU, median work CPU) of ``runs`` runs of ``argv``, ``before_each`` run first."""
    process, work = [], []
    for _ in range(runs):
        before_each()
        cpu, data = timed(argv)
        process.append(cpu)
        work.append(data.get("work", cpu))
    return statistics.median(process), statistics.median(work)


def readelf_cpu(files: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for f in files:
        subprocess.run(["readelf", "-dV", "--dyn-syms", "-W", f], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    args = sys.argv[1:]
    smoke = "--smoke" in args
    args = [a for a in args if a != "--smoke"] or ([sys.executable] if smoke else [])
    if len(args) != 1 or args[0] in ("-h", "--help"):
        raise SystemExit(__doc__)
    runs = 3 if smoke else 9
    lines: list[tuple[str, float | None, float | None, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        site = site_packages_of(args[0])
        if smoke:
            site = smoke_site(site, Path(tmp) / "site-packages")
        files = files_to_read(site)
        total = sum(Path(f).stat().st_size for f in files)
        print(f"{len(files)} files, {total / 2**30:.2f} GiB, under {site}")
        print(f"CPU time (user + sys), median of {runs} runs; work: the reading alone, "
              "process: the whole child (interpreter start and imports included)")
        listing = Path(tmp) / "files.json"
        listing.write_text(json.dumps(files))
        py = sys.executable
        timed([py, "-c", OURS, str(listing)])  # warm the page cache
        floor_runs = max(1, runs // 3)
        readelf = statistics.median(readelf_cpu(files) for _ in range(floor_runs))
        lines.append((f"floor: readelf -dV --dyn-syms per file ({floor_runs} run(s))", readelf, None, ""))
        cache = Path(tmp) / "cache"
        fresh = Path(tmp) / "fresh"

        def empty_cache() -> None:
            shutil.rmtree(fresh, ignore_errors=True)

        cold = median_of(runs, [py, "-c", INSPECT, str(site), str(fresh)], empty_cache)
        timed([py, "-c", INSPECT, str(site), str(cache)])  # fill the cache
        warm = median_of(runs, [py, "-c", INSPECT, str(site), str(cache)])
        cache_files = [str(p) for p in sorted(cache.rglob("*.json"))]
        floor = median_of(runs, [py, "-c", WARM_FLOOR, str(listing), *cache_files])
        lines.append(("floor: stat each file, read the file cache", *floor, "(a warm inspection must)"))
        lines.append(("ours (read_elf, all symbols)", *median_of(runs, [py, "-c", OURS, str(listing)]), ""))
        cpu, data = timed([py, "-c", PYELFTOOLS, str(listing)])
        lines.append(("pyelftools full parse (1 run)", cpu, data["work"], ""))
        lines.append(("inspect_path, cold (empty file cache)", *cold, "goal <= 0.3 s (torch 2.14.1 cu130)"))
        lines.append(("inspect_path, warm file cache", *warm, "goal <= 0.05 s (torch 2.14.1 cu130)"))
    for label, process, work, goal in lines:
        work_text = f"work {work:6.3f} s" if work is not None else " " * 13
        print(f"{label:48s} {work_text}  process {process:6.3f} s  {goal}".rstrip())


if __name__ == "__main__":
    main()
