"""Windows targets: torch/lib/*.dll and the CUDA DLLs they reach, by the DLL search torch sets up."""

from __future__ import annotations

import re
from pathlib import Path

from zluda_runner.core.errors import BinaryFormatError
from zluda_runner.core.families import parse_library_name
from zluda_runner.core.paths import real_path
from zluda_runner.inspection.collect import (
    DLOPENED_WINDOWS_BY_FAMILY,
    Collector,
    Walked,
    reach_of,
    resolved_of,
)
from zluda_runner.inspection.profile import ObjectInfo
from zluda_runner.inspection.readers import Readers
from zluda_runner.loader.windows import DllSearchModel, TorchDllLoop

# --------------------------------------------------------------------------- Windows


def _dlls_in(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix.lower() == ".dll" and p.is_file())
    except OSError:
        return []


_GLOB_DLLS = re.compile(r"""glob\.glob\(\s*os\.path\.join\(\s*th_dll_path\s*,\s*['"]\*\.dll['"]\s*\)""")
_LOAD_EX = re.compile(r"LoadLibraryExW\(\s*dll\s*,\s*None\s*,\s*(0x[0-9a-fA-F]+|\d+)\s*\)")


def read_torch_dll_loop(torch_dir: Path) -> TorchDllLoop:
    """Does this torch's ``__init__.py`` load every ``torch/lib/*.dll`` at import? Read, never run."""
    try:
        text = (Path(torch_dir) / "__init__.py").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return TorchDllLoop(present=False)
    glob_call = _GLOB_DLLS.search(text)
    load = _LOAD_EX.search(text, glob_call.end()) if glob_call else None
    if glob_call is None or load is None:
        return TorchDllLoop(present=False)
    line = text.count("\n", 0, load.start()) + 1
    return TorchDllLoop(
        present=True,
        flags=int(load.group(1), 0),
        where=f"{Path(torch_dir).name}/__init__.py:{line}",
        fallback_path=re.search(r"kernel32\.LoadLibraryW\(\s*dll\s*\)", text[load.end():]) is not None,
    )


def walk_windows_torch(torch_dir: Path, cache_dir: Path | None, *, exec_prefix: Path | None) -> Walked:
    """torch/lib/*.dll and the CUDA DLLs they reach, resolved by the DLL search torch sets up."""
    model = DllSearchModel.for_torch(torch_dir, exec_prefix=exec_prefix)
    roots = _dlls_in(torch_dir / "lib")
    if read_torch_dll_loop(torch_dir).present:
        model.loop_loaded = {p.name.lower(): str(p) for p in roots}
    readers = Readers(cache_dir)
    walked = walk_pe(str(torch_dir / "lib"), roots, model, readers)
    readers.flush()
    return walked


def walk_pe(shown_root: str, roots: list[Path], model: DllSearchModel, readers: Readers) -> Walked:
    """Walk the PE ``roots`` and the CUDA DLLs they reach (``shown_root``: the profile's root)."""
    collector = Collector()
    warnings: list[str] = []
    objects: list[ObjectInfo] = []
    queue = list(roots)
    seen: set[str] = set()
    while queue:
        path = queue.pop(0)
        real = real_path(path)
        if real in seen:
            continue
        seen.add(real)
        try:
            info = readers.pe(path)
        except BinaryFormatError as exc:
            warnings.append(f"skipped {path}: {exc.message}")
            continue
        if info.machine != "AMD64":
            warnings.append(f"skipped {path}: a {info.machine} DLL, not x86-64")
            continue
        name = Path(path).name
        objects.append(ObjectInfo(path=str(path), format="pe", soname=info.dll_name,
                                  needed=tuple(info.needed)))
        for dll, imported in [*info.imports.items(), *info.delay_imports.items()]:
            symbols = [i if isinstance(i, str) else f"#{i}" for i in imported]
            need = collector.need(dll, name, symbols=symbols)
            if need is None:
                continue
            res = model.resolve(dll, path)
            need.reach.append(reach_of(name, res))
            if need.resolved is None:
                need.resolved = resolved_of(res)
                if res.path and Path(res.path).is_file():
                    queue.append(Path(res.path))
        parsed = parse_library_name(name)
        for opened, reason in DLOPENED_WINDOWS_BY_FAMILY.get(parsed.family if parsed else "", []):
            entry = collector.dlopen(opened, name, reason)
            if entry is not None and entry.resolved is None:
                entry.resolved = resolved_of(model.resolve_restricted(opened))
    collected = collector.finish()
    return Walked(os="windows", roots=(shown_root,), objects=tuple(objects), libraries=collected.libraries,
                  dlopened=collected.dlopened, warnings=(*warnings, *collected.warnings),
                  cudart_major=collected.cudart_major)


