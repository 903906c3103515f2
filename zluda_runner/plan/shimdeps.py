"""The shims' own dependencies (ROCm), resolved on this host the way ld.so will when it loads a shim.

ZLUDA's Linux shims need ROCm libraries by their *unversioned* names (upstream v6's xtask patches
DT_NEEDED to ``libamdhip64.so``, ``librocblas.so``, ...; cuDNN also ``libMIOpen.so.1``). Each
shim is loaded with the loader model under the workload's environment (the user's
``LD_LIBRARY_PATH``, ld.so.cache, the default folders). A library found only in ROCm's usual
folders (``$ROCM_PATH/lib``, ``/opt/rocm/lib``, ``/opt/rocm-*/lib``) is served by putting that
folder on ``LD_LIBRARY_PATH`` after the link folder; one found nowhere is a fatal verdict naming the
library, the shim and the package that ships it, so the workload is never started to find out.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.binfmt.elf import ElfInfo, read_elf
from zluda_runner.core.errors import BinaryFormatError
from zluda_runner.loader.glibc import LoaderEnv, LoaderModel

#: unversioned ROCm name -> (Debian/Ubuntu package, AMD ROCm package) that ships it
ROCM_PACKAGES: dict[str, tuple[str, str]] = {
    "libamdhip64.so": ("libamdhip64-dev", "hip-runtime-amd"),
    "librocblas.so": ("librocblas-dev", "rocblas"),
    "librocsparse.so": ("librocsparse-dev", "rocsparse"),
    "libhipblaslt.so": ("libhipblaslt-dev", "hipblaslt"),
    "librocm_smi64.so": ("librocm-smi-dev", "rocm-smi-lib"),
    "libMIOpen.so.1": ("libmiopen-hip1 (or the MIOpen build for your ROCm)", "miopen-hip"),
    "librocfft.so": ("librocfft-dev", "rocfft"),
    "libhipfft.so": ("libhipfft-dev", "hipfft"),
}


@dataclass(frozen=True)
class ShimDeps:
    """What loading the shims needs from the host: extra folders, and per shim the problems."""

    library_path: list[str] = field(default_factory=list)  # ROCm folders to put on LD_LIBRARY_PATH
    problems: dict[str, list[str]] = field(default_factory=dict)  # shim path -> fatal reasons
    notes: dict[str, list[str]] = field(default_factory=dict)  # shim path -> how its needs are found


def rocm_dirs(env: Mapping[str, str]) -> list[str]:
    """ROCm's usual library folders on this host, in the order they are tried."""
    out: list[str] = []
    for base in (env.get("ROCM_PATH"), env.get("HIP_PATH"), "/opt/rocm", *sorted(glob.glob("/opt/rocm-*"))):
        if not base:
            continue
        for sub in ("lib", "lib64"):
            cand = os.path.join(base, sub)
            if os.path.isdir(cand) and cand not in out:
                out.append(cand)
    return out


def _dynamic(path: Path) -> ElfInfo:
    return read_elf(path, symbols=False)


def _versioned_only(name: str, dirs: Sequence[str], ldcache: Mapping[str, str]) -> list[str]:
    """Files ``<name>.N...`` present where ``name`` itself is not (a distribution runtime package)."""
    found = [path for key, path in ldcache.items() if key.startswith(name + ".")]
    for d in dirs:
        found.extend(sorted(glob.glob(os.path.join(glob.escape(d), glob.escape(name) + ".*"))))
    return list(dict.fromkeys(found))


def _missing_reason(name: str, shim: str, env: LoaderEnv, rocm: Sequence[str]) -> str:
    deb, amd = ROCM_PACKAGES.get(name, ("the ROCm package that ships it", "the ROCm package that ships it"))
    where = ", ".join([*rocm, *env.ld_library_path] or ["no ROCm folder found"])
    versioned = _versioned_only(name, [*rocm, *env.ld_library_path, *env.default_dirs], env.ldcache)
    if versioned:
        return (
            f"{Path(shim).name} needs {name}, and only the versioned {', '.join(versioned[:3])} is installed "
            f"(a distribution runtime package): ld.so looks for the exact name {name}, so the process would "
            f"fail with '{name}: cannot open shared object file'. Install the development package "
            f"({deb} on Debian/Ubuntu, {amd} from AMD's ROCm repository), or make a link {name} -> "
            f"{Path(versioned[0]).name} in a folder on LD_LIBRARY_PATH"
        )
    return (
        f"{Path(shim).name} needs {name}, which is not on LD_LIBRARY_PATH, in ld.so.cache, the default "
        f"folders or ROCm's folders ({where}): the process would fail with '{name}: cannot open shared "
        f"object file'. Install ROCm ({amd}; Debian/Ubuntu: {deb}), or set ROCM_PATH / LD_LIBRARY_PATH to "
        "the folder that holds it"
    )


def resolve_shim_deps(
    shims: Sequence[str], base_env: Mapping[str, str], *,
    reader: Callable[[Path], ElfInfo] = _dynamic, loader_env: LoaderEnv | None = None,
) -> ShimDeps:
    """Load every shim with the loader model (as a dlopen, the way the workload reaches it)."""
    env = loader_env if loader_env is not None else LoaderEnv.from_host(base_env)
    env.preload, env.audit = [], []
    rocm = rocm_dirs(base_env)
    deps = ShimDeps()
    model = LoaderModel(env, reader=reader)
    for shim in dict.fromkeys(shims):
        try:
            info = reader(Path(shim))
        except BinaryFormatError:
            continue  # an unreadable shim already has its own fatal verdict
        for name in info.needed:
            res = model.resolve(name, info)
            if res.found:
                continue
            extra = next((d for d in rocm if os.path.isfile(os.path.join(d, name))), None)
            if extra is None:
                deps.problems.setdefault(shim, []).append(_missing_reason(name, shim, env, rocm))
                continue
            if extra not in deps.library_path:
                deps.library_path.append(extra)
                env.ld_library_path.append(extra)  # later shims see it too
            deps.notes.setdefault(shim, []).append(
                f"its dependency {name} is in {extra}, which is not on the loader's path: that folder goes "
                "on LD_LIBRARY_PATH after the link folder"
            )
        if shim in deps.problems:
            continue
        # Everything the shim pulls in, transitively (a broken ROCm install fails here, not in the workload).
        loaded = model.load(shim, as_dlopen=True)
        for error in loaded.errors:
            if "cannot open shared object file" in error:
                missing = error.split(":", 1)[0]
                deps.problems.setdefault(shim, []).append(_missing_reason(missing, shim, env, rocm)
                                                          + f" ({error})")
    return deps
