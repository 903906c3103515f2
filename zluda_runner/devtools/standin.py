"""A stand-in ZLUDA release: C stubs with the right names, SONAMEs, version nodes and exports.

For tests and manual acceptance on machines without an AMD GPU (or without ZLUDA):
given what a target imports from each CUDA library (a
:class:`~zluda_runner.inspection.profile.TargetProfile`, or a hand-written spec), write one
C file per library whose every export is a stub returning 0 (CUDA's success
code), plus a GNU ld version script that defines the needed version nodes, and
compile them with :func:`zluda_runner.core.native.compile_c` into a folder laid out
like ZLUDA's Linux tarball (``libcuda.so.1`` + ``libcuda.so`` link,
``libcublas.so.13``, ...).

The driver stand-in (``libcuda.so.1``) is just enough for NVIDIA's libcudart to
load it: ``cuInit``, ``cuDriverGetVersion`` (13000), ``cuDeviceGetCount`` (0),
``cuGetProcAddress``/``cuGetProcAddress_v2`` (a pointer to the named export, or
to a generic stub returning 0) and ``cuGetExportTable`` (an error).

Faults can be planted per library: no SONAME, no symbol versioning at all,
missing symbols.

    python -m zluda_runner.devtools.standin --from-python /venv/bin/python --out DIR
    python -m zluda_runner.devtools.standin --profile profile.json --out DIR
    python -m zluda_runner.devtools.standin --spec spec.json --out DIR \\
        [--no-soname libcublas.so.13] [--no-versions libcufft.so.12] [--drop libcublas.so.13:cublasSgemm_v2]
    python -m zluda_runner.devtools.standin --from-python PY --layout v6 --out R [--rocm-out DIR]

``spec.json``: ``{"libcublas.so.13": {"soname": "libcublas.so.13", "versions": {"libcublas.so.13":
["cublasCreate_v2"]}, "unversioned": []}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from zluda_runner.core.fsutil import atomic_copy
from zluda_runner.devtools.stubs import StandinLib, build_lib, c_source, place_link, version_script

__all__ = ["RELEASE_FAMILIES", "StandinLib", "apply_faults", "build_lib", "build_release", "c_source",
           "libs_from_profile", "libs_from_spec", "place_link", "version_script"]

# Families a ZLUDA release stands in for (the rewrite's Linux tarball).
RELEASE_FAMILIES = ("driver", "nvml", "cublas", "cublasLt", "cufft", "cusparse", "cudnn")

# Development names the tarball also carries as links (libcuda.so -> libcuda.so.1).
_DEV_LINKS = {"libcuda.so.1": "libcuda.so", "libnvidia-ml.so.1": "libnvidia-ml.so"}


# --------------------------------------------------------------------------- faults


def without_soname(lib: StandinLib) -> StandinLib:
    return replace(lib, soname=None)


def without_versions(lib: StandinLib) -> StandinLib:
    """Every symbol exported, none versioned (the loader then aborts at the first versioned binding)."""
    flat = [s for syms in lib.versions.values() for s in syms] + list(lib.unversioned)
    return replace(lib, versions={}, unversioned=list(dict.fromkeys(flat)))


def without_symbols(lib: StandinLib, dropped: Iterable[str]) -> StandinLib:
    gone = set(dropped)
    return replace(
        lib,
        versions={v: [s for s in syms if s not in gone] for v, syms in lib.versions.items()},
        unversioned=[s for s in lib.unversioned if s not in gone],
    )


# --------------------------------------------------------------------------- specs


def lib_from_spec(name: str, entry: Mapping[str, Any]) -> StandinLib:
    return StandinLib(
        name=name,
        soname=entry.get("soname", name),
        versions={str(k): list(v) for k, v in (entry.get("versions") or {}).items()},
        unversioned=list(entry.get("unversioned") or []),
        links=list(entry.get("links") or [x for x in [_DEV_LINKS.get(name)] if x]),
    )


def libs_from_spec(spec: Mapping[str, Any]) -> list[StandinLib]:
    """``{needed name: {"soname", "versions", "unversioned", "links"}}`` (or a ``(soname, versions,
    symbols)`` triple: symbols go into every listed version node's first one)."""
    libs = []
    for name, entry in spec.items():
        if isinstance(entry, (list, tuple)):
            soname, versions, symbols = entry
            vers = list(versions or [])
            mapping = {v: (list(symbols) if i == 0 else []) for i, v in enumerate(vers)}
            entry = {"soname": soname, "versions": mapping, "unversioned": [] if vers else list(symbols)}
        libs.append(lib_from_spec(name, entry))
    return libs


def _imports_by_version(object_paths: Iterable[str], need: str) -> dict[str, list[str]]:
    """Versioned imports of ``need`` by the given objects: version node -> symbols."""
    from zluda_runner.binfmt.elf import read_elf

    out: dict[str, list[str]] = {}
    for path in object_paths:
        try:
            imports = read_elf(path).imports
        except Exception:  # an object we cannot read adds nothing
            imports = []
        for sym in imports:
            if sym.file == need and sym.version:
                bucket = out.setdefault(sym.version, [])
                if sym.name not in bucket:
                    bucket.append(sym.name)
    return out


def libs_from_profile(profile: Any, families: Sequence[str] = RELEASE_FAMILIES) -> list[StandinLib]:
    """Stand-ins for every need of ``profile`` in ``families`` (plus the dlopened driver/NVML),
    exporting every symbol the target imports from it, in the version nodes it asks for."""
    objects = [o.path for o in getattr(profile, "objects", [])]
    libs: dict[str, StandinLib] = {}
    for need in profile.libraries:
        if need.family not in families:
            continue
        by_version = _imports_by_version(objects, need.name)
        for version in need.versions_required:
            by_version.setdefault(version, [])
        placed = {s for syms in by_version.values() for s in syms}
        rest = [s for s in need.symbols if s not in placed]
        if by_version:
            first = next(iter(by_version))
            by_version[first].extend(rest)
            lib = StandinLib(need.name, need.name, by_version, [])
        else:
            lib = StandinLib(need.name, need.name, {}, rest)
        lib.links = [x for x in [_DEV_LINKS.get(need.name)] if x]
        libs[need.name] = lib
    for dl in getattr(profile, "dlopened", []):
        if dl.family in families and dl.name not in libs:
            libs[dl.name] = StandinLib(dl.name, dl.name, links=[x for x in [_DEV_LINKS.get(dl.name)] if x])
    if "driver" in families and not any(lib.is_driver for lib in libs.values()):
        libs["libcuda.so.1"] = StandinLib("libcuda.so.1", "libcuda.so.1", links=["libcuda.so"])
    return list(libs.values())


# --------------------------------------------------------------------------- build


def build_release(libs: Sequence[StandinLib], out_dir: Path, *, build_dir: Path | None = None,
                  cc: str | None = None) -> Path:
    """Build every stand-in and lay them out in ``out_dir`` like ZLUDA's Linux tarball."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(build_dir) if build_dir is not None else out / ".build"
    for lib in libs:
        built = build_lib(lib, work, cc=cc)
        atomic_copy(built, out / lib.name, durable=False)
        for link in lib.links:
            place_link(out, link, lib.name)
    return out


def build_torch_venv(folder: Path, release: Path) -> Path:
    """A bare virtual environment in ``folder/venv`` whose torch looks like a CUDA build to inspection (its
    ``version.py`` says 2.14.1+cu130; ``torch/lib/libtorch_cuda.so`` needs ``libcublas.so.13``, linked
    against ``release``'s) but is never imported: the target of a launch a test or a benchmark measures.
    Returns its interpreter."""
    import shutil

    from zluda_runner.core.child import run_child
    from zluda_runner.core.native import compile_c

    venv = folder / "venv"
    made = run_child([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=300)
    python = venv / "bin" / "python"
    asked = run_child([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                      timeout=60)
    if not made.ok or not asked.ok:
        raise RuntimeError(f"no virtual environment made in {venv}: {made.describe()}; {asked.describe()}")
    purelib = asked.stdout.strip()
    torch = Path(purelib) / "torch"
    (torch / "lib").mkdir(parents=True)
    (torch / "__init__.py").write_text("raise ImportError('a stand-in torch')\n")
    (torch / "version.py").write_text("__version__ = '2.14.1+cu130'\ncuda = '13.0'\nhip = None\n")
    source = folder / "torch_cuda.c"
    source.write_text("extern int cublasCreate_v2(void *);\n"
                      "int torch_cuda_init(void) { return cublasCreate_v2(0); }\n")
    built = compile_c([source], "libtorch_cuda.so", folder / "build",
                      args=["-Wl,-soname,libtorch_cuda.so", f"-L{release}", "-l:libcublas.so.13"])
    shutil.copy2(built, torch / "lib" / "libtorch_cuda.so")
    return python


def apply_faults(libs: Sequence[StandinLib], *, no_soname: Iterable[str] = (),
                 no_versions: Iterable[str] = (), drop: Mapping[str, Iterable[str]] | None = None,
                 only: Iterable[str] | None = None) -> list[StandinLib]:
    names_no_soname, names_no_versions = set(no_soname), set(no_versions)
    keep = set(only) if only is not None else None
    out = []
    for lib in libs:
        if keep is not None and lib.name not in keep:
            continue
        if lib.name in names_no_soname:
            lib = without_soname(lib)
        if lib.name in names_no_versions:
            lib = without_versions(lib)
        if drop and lib.name in drop:
            lib = without_symbols(lib, drop[lib.name])
        out.append(lib)
    return out


# --------------------------------------------------------------------------- CLI


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m zluda_runner.devtools.standin",
                                     description="Build a stand-in ZLUDA release (C stubs).")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-python", metavar="PY", help="inspect the torch of this interpreter")
    src.add_argument("--profile", metavar="JSON", help="a TargetProfile (zluda-run inspect --json)")
    src.add_argument("--spec", metavar="JSON", help="{needed name: {soname, versions, unversioned}}")
    parser.add_argument("--out", required=True, metavar="DIR", help="the release folder to write")
    parser.add_argument("--families", default=",".join(RELEASE_FAMILIES),
                        help=f"families to stand in for (default {','.join(RELEASE_FAMILIES)})")
    parser.add_argument("--no-soname", action="append", default=[], metavar="NAME")
    parser.add_argument("--no-versions", action="append", default=[], metavar="NAME")
    parser.add_argument("--drop", action="append", default=[], metavar="NAME:SYMBOL")
    parser.add_argument("--build-dir", metavar="DIR", help="where to compile (default OUT/.build)")
    parser.add_argument("--layout", choices=("names", "v6"), default="names",
                        help="names: one file per CUDA name, SONAMEs, version nodes (default); v6: the "
                        "real upstream v6 tarball (lib<name>.so + CUDA-name links, no SONAME, versym-only "
                        "exports, unversioned ROCm DT_NEEDED, zluda_ld), see devtools/standin_v6.py")
    parser.add_argument("--rocm-out", metavar="DIR",
                        help="v6: where to write the stub ROCm libraries (default OUT-rocm-stubs)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    if args.spec:
        libs = libs_from_spec(json.loads(Path(args.spec).read_text()))
    else:
        from zluda_runner.inspection.inspect import inspect_python
        from zluda_runner.inspection.profile import TargetProfile

        if args.profile:
            data = json.loads(Path(args.profile).read_text())
            profile = TargetProfile.from_dict(data.get("profile", data))
        else:
            profile = inspect_python(args.from_python)
        libs = libs_from_profile(profile, families)
    drop: dict[str, list[str]] = {}
    for item in args.drop:
        name, _, sym = item.partition(":")
        drop.setdefault(name, []).append(sym)
    libs = apply_faults(libs, no_soname=args.no_soname, no_versions=args.no_versions, drop=drop)
    if args.layout == "v6":
        from zluda_runner.devtools.standin_v6 import build_v6_release

        out_v6 = Path(args.out)
        rocm = Path(args.rocm_out) if args.rocm_out else out_v6.parent / f"{out_v6.name}-rocm-stubs"
        written = build_v6_release(libs, out_v6, rocm,
                                   build_dir=Path(args.build_dir) if args.build_dir else None)
        for link, target in sorted(written.items()):
            print(f"{out_v6 / link} -> {target.name}")
        print(f"{out_v6 / 'zluda_ld'} -> libzluda_ld.so\nROCm stubs (put on LD_LIBRARY_PATH): {rocm}")
        return 0
    out = build_release(libs, Path(args.out), build_dir=Path(args.build_dir) if args.build_dir else None)
    for lib in libs:
        vers = ", ".join(f"{v} ({len(s)})" for v, s in lib.versions.items()) or "unversioned"
        print(f"{out / lib.name}: soname={lib.soname or '-'} {len(lib.symbols())} symbols; {vers}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
