"""Windows targets: torch/lib/*.dll and the CUDA DLLs they reach, by the DLL search torch sets up."""

from __future__ import annotations

import os
from pathlib import Path

from zluda_runner.core.errors import BinaryFormatError
from zluda_runner.core.families import parse_library_name
from zluda_runner.loader.windows import DllSearchModel
from zluda_runner.target.collect import DLOPENED_WINDOWS_BY_FAMILY, Collector, reach_of, resolved_of
from zluda_runner.target.profile import ObjectInfo, TargetProfile
from zluda_runner.target.readers import Readers

# --------------------------------------------------------------------------- Windows


def _dlls_in(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix.lower() == ".dll" and p.is_file())
    except OSError:
        return []


def fill_windows(profile: TargetProfile, torch_dir: Path, cache_dir: Path | None, *,
                  exec_prefix: Path | None) -> None:
    """torch/lib/*.dll and the CUDA DLLs they reach, resolved by the DLL search torch sets up."""
    profile.os = "windows"
    model = DllSearchModel.for_torch(torch_dir, exec_prefix=exec_prefix)
    roots = _dlls_in(torch_dir / "lib")
    profile.roots = [str(torch_dir / "lib")]
    walk_pe(profile, roots, model, Readers(cache_dir))


def walk_pe(profile: TargetProfile, roots: list[Path], model: DllSearchModel, readers: Readers) -> None:
    collector = Collector(profile)
    queue = list(roots)
    seen: set[str] = set()
    while queue:
        path = queue.pop(0)
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        try:
            info = readers.pe(path)
        except BinaryFormatError as exc:
            profile.warnings.append(f"skipped {path}: {exc.message}")
            continue
        if info.machine != "AMD64":
            profile.warnings.append(f"skipped {path}: a {info.machine} DLL, not x86-64")
            continue
        name = Path(path).name
        profile.objects.append(ObjectInfo(path=str(path), format="pe", soname=info.dll_name,
                                          needed=info.needed))
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
                entry.resolved = resolved_of(model.resolve(opened, path))
    collector.finish()


