"""Linux targets: torch's extension modules (or one binary) walked with the glibc loader model."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from zluda_runner.binfmt.elf import ElfInfo, peek_elf_header
from zluda_runner.binfmt.pe import is_pe
from zluda_runner.core.errors import BinaryFormatError, TargetError
from zluda_runner.core.families import parse_library_name
from zluda_runner.inspection.collect import (
    DLOPENED_BY_FAMILY,
    DLOPENED_BY_OBJECT,
    Collector,
    Walked,
    reach_of,
    resolved_of,
)
from zluda_runner.inspection.profile import ObjectInfo, TargetProfile
from zluda_runner.inspection.readers import Readers, SymbolSummary
from zluda_runner.inspection.windows import walk_pe
from zluda_runner.loader.glibc import LoadedObject, LoaderEnv, LoaderModel, LoadResult, Resolution
from zluda_runner.loader.windows import DllSearchModel

# --------------------------------------------------------------------------- single binary


def inspect_binary(path: Path, cache_dir: Path | None, env: Mapping[str, str] | None) -> TargetProfile:
    readers = Readers(cache_dir)
    if is_pe(path):
        info = readers.pe(path)
        if info.machine != "AMD64":
            raise TargetError(
                f"{path} is a {info.machine} Windows binary, not x86-64",
                hint="ZLUDA runs x86-64 (AMD64) programs only; inspect the 64-bit build",
            )
        model = DllSearchModel(app_dir=path.parent)
        walked = walk_pe(str(path), [path], model, readers)
        readers.flush()
        return profile_of(walked)
    header = peek_elf_header(path)
    if header is None:
        raise TargetError(
            f"{path} is neither an ELF nor a PE file",
            hint="pass a shared library or executable (.so, .dll, .exe), a torch folder, or {opt:python}",
        )
    elf_class, machine = header
    if (elf_class, machine) != (64, "x86_64"):
        raise TargetError(
            f"{path} is a {elf_class}-bit {machine} ELF file, not x86-64",
            hint="ZLUDA runs 64-bit x86-64 programs only; inspect the x86-64 build",
        )
    try:
        readers.elf(path)
    except BinaryFormatError as exc:
        raise TargetError(exc.raw_message, hint=exc.raw_hint) from exc
    walked = _walk_elf(path, [], readers, env)
    readers.flush()
    return profile_of(walked)


def profile_of(walked: Walked, base: TargetProfile | None = None) -> TargetProfile:
    """``base`` (the interpreter's and torch's facts: default none) with what the walk found; the CUDA
    major is torch's where it says, else the newest cudart linked."""
    base = base or TargetProfile()
    return dataclasses.replace(
        base, os=walked.os, roots=walked.roots, objects=walked.objects, libraries=walked.libraries,
        dlopened=walked.dlopened, warnings=(*base.warnings, *walked.warnings),
        cuda_major=base.cuda_major if base.cuda_major is not None else walked.cudart_major,
    )


# --------------------------------------------------------------------------- Linux


def _torch_roots(torch_dir: Path) -> tuple[Path | None, list[Path]]:
    """(the extension the interpreter dlopens, every other ELF object in torch/lib)."""
    ext = sorted(torch_dir.glob("_C.*.so")) or sorted(torch_dir.glob("_C*.so"))
    lib_dir = torch_dir / "lib"
    libs = sorted(p for p in lib_dir.glob("*.so*") if p.is_file() and peek_elf_header(p) is not None) \
        if lib_dir.is_dir() else []
    if ext:
        return ext[0], libs
    python_lib = lib_dir / "libtorch_python.so"
    if python_lib.is_file():
        return python_lib, libs
    return None, libs


def walk_linux_torch(torch_dir: Path, cache_dir: Path | None, env: Mapping[str, str] | None) -> Walked:
    readers = Readers(cache_dir)
    warnings: list[str] = []
    root, libs = _torch_roots(torch_dir)
    if root is None:
        cuda_libs = [p for p in libs if _needs_cuda(readers, p)]
        if not cuda_libs:
            raise TargetError(
                f"{torch_dir} has no _C extension and no library that needs CUDA",
                hint="the torch install is incomplete; reinstall torch",
            )
        root, libs = cuda_libs[0], cuda_libs[1:]
        warnings.append(f"no torch/_C extension found: simulated loading {root.name} instead")
    walked = _walk_elf(root, libs, readers, env, scope=torch_dir.parent)
    readers.flush()
    return dataclasses.replace(walked, warnings=(*warnings, *walked.warnings))


def _needs_cuda(readers: Readers, path: Path) -> bool:
    try:
        info = readers.elf(path)
    except BinaryFormatError:
        return False
    return any(parse_library_name(n) is not None for n in info.needed)


def _chain(obj: LoadedObject, by_path: Mapping[str, LoadedObject]) -> list[ElfInfo]:
    """The objects that loaded ``obj``: its loader, that one's loader, ... (glibc's l_loader chain)."""
    chain: list[ElfInfo] = []
    seen = {obj.path}
    current = by_path.get(obj.loaded_by) if obj.loaded_by else None
    while current is not None and current.path not in seen:
        chain.append(current.info)
        seen.add(current.path)
        current = by_path.get(current.loaded_by) if current.loaded_by else None
    return chain


def _walk_elf(root: Path, extra: Sequence[Path], readers: Readers,
              env: Mapping[str, str] | None, *, scope: Path | None = None) -> Walked:
    """Simulate ld.so loading ``root`` (as dlopen'd by the interpreter), then look at ``extra`` objects
    (loaded later by dlopen) against the same process; collect every CUDA-family need."""
    model = LoaderModel(LoaderEnv.from_host(env), reader=readers.elf)
    try:
        result = model.load(root, as_dlopen=root.suffix == ".so" or ".so." in root.name)
    except BinaryFormatError as exc:
        raise TargetError(exc.raw_message, hint=exc.raw_hint) from exc
    warnings = [f"loader: {e}" for e in result.errors]
    warnings.extend(f"loader: {w}" for w in result.warnings)
    objects: list[ObjectInfo] = []
    collector = Collector()
    first: dict[tuple[str | None, str], Resolution] = {}
    for res in result.resolutions:
        first.setdefault((res.requester, res.name), res)
    by_path = {o.path: o for o in result.objects}
    loaded_reals = {os.path.realpath(o.path) for o in result.objects}
    loaded: list[tuple[LoadedObject, list[ElfInfo]]] = [
        (o, _chain(o, by_path)) for o in result.objects if o.kind not in ("interpreter",)
    ]
    for path in extra:
        if os.path.realpath(path) in loaded_reals:
            continue
        try:
            info = readers.elf(path)
        except BinaryFormatError as exc:
            warnings.append(f"skipped {path}: {exc.message}")
            continue
        loaded.append((LoadedObject(path=str(path), load_name=str(path), soname=info.soname, info=info,
                                     kind="dlopen"), []))
    scope_real = os.path.realpath(scope) if scope is not None else None
    for obj, chain in loaded:
        info = obj.info
        name = Path(obj.path).name
        cuda_needed = [n for n in info.needed if parse_library_name(n) is not None]
        own = parse_library_name(info.soname or name)
        in_scope = scope_real is not None and os.path.realpath(obj.path).startswith(scope_real + os.sep)
        if obj.path == str(root) or cuda_needed or own is not None or in_scope:
            objects.append(ObjectInfo(path=obj.path, format="elf", soname=info.soname,
                                      needed=tuple(info.needed), rpath=tuple(info.rpath),
                                      runpath=tuple(info.runpath)))
        if cuda_needed:
            _collect_elf_needs(collector, model, readers, obj, chain, cuda_needed, first, result)
        _collect_elf_dlopens(collector, model, obj, chain, own.family if own else None, result)
    collected = collector.finish()
    warnings.extend(collected.warnings)
    for check in result.version_problems:
        if parse_library_name(check.file) is not None:
            who = Path(check.requester).name
            warnings.append(f"version {check.version} of {check.file} needed by {who}: {check.status}")
    return Walked(os="linux", roots=(str(root),), objects=tuple(objects), libraries=collected.libraries,
                  dlopened=collected.dlopened, warnings=tuple(warnings), cudart_major=collected.cudart_major)


def _collect_elf_needs(collector: Collector, model: LoaderModel, readers: Readers, obj: LoadedObject,
                       chain: list[ElfInfo], cuda_needed: list[str],
                       first: Mapping[tuple[str | None, str], Resolution], result: LoadResult) -> None:
    name = Path(obj.path).name
    try:
        summary = readers.symbols(obj.path)
    except BinaryFormatError:
        summary = SymbolSummary()
    by_file = summary.imports_by_file
    remaining = set(summary.c_imports)
    for needed in cuda_needed:
        in_load = first.get((obj.path, needed))
        res = in_load or model.resolve(needed, obj.info, chain, loaded=result.objects)
        symbols = list(by_file.get(needed, []))
        if remaining and res.found and res.path:
            try:
                exported = set(readers.c_exports(res.path))
            except BinaryFormatError:
                exported = set()
            hits = remaining & exported
            symbols.extend(sorted(hits))
            remaining -= hits
        entry = collector.need(needed, name, versions=obj.info.version_needs.get(needed, []), symbols=symbols)
        if entry is None:
            continue
        own_way = model.resolve(needed, obj.info, chain)
        entry.reach.append(reach_of(name, own_way))
        if entry.resolved is None or (entry.resolved.via == "already-loaded" and res.via != "already-loaded"):
            entry.resolved = resolved_of(res)


def _collect_elf_dlopens(collector: Collector, model: LoaderModel, obj: LoadedObject, chain: list[ElfInfo],
                         family: str | None, result: LoadResult) -> None:
    name = Path(obj.path).name
    opened = list(DLOPENED_BY_FAMILY.get(family or "", []))
    opened += DLOPENED_BY_OBJECT.get(obj.info.soname or name, [])
    for lib, reason in opened:
        entry = collector.dlopen(lib, name, reason)
        if entry is not None and entry.resolved is None:
            entry.resolved = resolved_of(model.resolve_dlopen(lib, obj.info, chain, loaded=result.objects))
