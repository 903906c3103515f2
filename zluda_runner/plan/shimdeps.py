"""The shims' own dependencies (ROCm), resolved on this host the way ld.so will when it loads a shim.

ZLUDA's Linux shims need ROCm libraries by their *unversioned* names (upstream v6's xtask patches
DT_NEEDED to ``libamdhip64.so``, ``librocblas.so``, ...; cuDNN also ``libMIOpen.so.1``). Each name is
found by :func:`zluda_runner.host.libraries.find_library`, the one finder the defaults and the doctor
read too (the loader model under the workload's environment, then ROCm's own folders). A library found
only in ROCm's folders is served by putting that folder on ``LD_LIBRARY_PATH`` after the link folder;
one found nowhere is a fatal verdict naming the library, the shim, what was searched and the package
that ships it, so the workload is never started to find out.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zluda_runner.binfmt.elf import ElfInfo, read_elf
from zluda_runner.core.errors import BinaryFormatError
from zluda_runner.host.fs import ROOT_ENV, HostFs, root_from_env
from zluda_runner.host.libraries import HostLibrary, find_library, launch_loader_env
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


def _dynamic(path: Path) -> ElfInfo:
    return read_elf(path, symbols=False)


def _versioned_only(lib: HostLibrary, fs: HostFs, env: LoaderEnv) -> list[str]:
    """Files ``<name>.N...`` present where ``name`` itself is not (a distribution runtime package)."""
    name = lib.name
    found = [path for key, path in env.ldcache.items() if key.startswith(name + ".")]
    for d in [f.removeprefix("LD_LIBRARY_PATH ") for f in lib.looked if f != "ld.so.cache"]:
        found.extend(sorted(glob.glob(os.path.join(glob.escape(str(fs.path(d))), glob.escape(name) + ".*"))))
    return list(dict.fromkeys(found))


def _missing_reason(lib: HostLibrary, shim: str, fs: HostFs, env: LoaderEnv) -> str:
    name = lib.name
    deb, amd = ROCM_PACKAGES.get(name, ("the ROCm package that ships it", "the ROCm package that ships it"))
    versioned = _versioned_only(lib, fs, env)
    if versioned:
        return (
            f"{Path(shim).name} needs {name}, and only the versioned {', '.join(versioned[:3])} is installed "
            f"(a distribution runtime package): ld.so looks for the exact name {name}, so the process would "
            f"fail with '{name}: cannot open shared object file'. Install the development package "
            f"({deb} on Debian/Ubuntu, {amd} from AMD's ROCm repository), or make a link {name} -> "
            f"{Path(versioned[0]).name} in a folder on LD_LIBRARY_PATH"
        )
    return (
        f"{Path(shim).name} needs {name}, which is found nowhere (looked for {lib.searched()}): the process "
        f"would fail with '{name}: cannot open shared object file'. Install ROCm ({amd}; Debian/Ubuntu: "
        f"{deb}), or set ROCM_PATH / LD_LIBRARY_PATH to the folder that holds it"
    )


def resolve_shim_deps(
    shims: Sequence[str], base_env: Mapping[str, str], *,
    reader: Callable[[Path], ElfInfo] = _dynamic, loader_env: LoaderEnv | None = None,
) -> ShimDeps:
    """Load every shim with the loader model (as a dlopen, the way the workload reaches it)."""
    # a fake root (ZLUDA_RUNNER_ROOT) is the host's ROCm; the C runtime and the rest are this machine's
    root = HostFs(root_from_env(base_env.get(ROOT_ENV) or "") if loader_env is None else None)
    env = loader_env if loader_env is not None else launch_loader_env(base_env)
    env.preload, env.audit = [], []
    deps = ShimDeps()
    model = LoaderModel(env, reader=reader)
    for shim in dict.fromkeys(shims):
        try:
            info = reader(Path(shim))
        except BinaryFormatError:
            continue  # an unreadable shim already has its own fatal verdict
        for name in info.needed:
            rooted = root.root is not None and name in ROCM_PACKAGES
            fs = root if rooted else HostFs()
            lib = find_library(name, base_env, "linux", fs=fs, loader=None if rooted else env, requester=info)
            if lib.loads_as_is or (lib.real and os.path.dirname(lib.real) in deps.library_path):
                continue
            if lib.real is None:
                deps.problems.setdefault(shim, []).append(_missing_reason(lib, shim, fs, env))
                continue
            deps.library_path.append(os.path.dirname(lib.real))
            env.ld_library_path.append(os.path.dirname(lib.real))  # later shims see it too
            deps.notes.setdefault(shim, []).append(
                f"its dependency {name} is in {lib.folder()} ({lib.how}), which is not on the loader's path: "
                "that folder goes on LD_LIBRARY_PATH after the link folder"
            )
        if shim in deps.problems:
            continue
        # Everything the shim pulls in, transitively (a broken ROCm install fails here, not in the workload).
        loaded = model.load(shim, as_dlopen=True)
        for error in loaded.errors:
            if "cannot open shared object file" in error:
                missing = error.split(":", 1)[0]
                fs = root if missing in ROCM_PACKAGES else HostFs()
                lib = find_library(missing, base_env, "linux", fs=fs, loader=None if fs.root else env)
                deps.problems.setdefault(shim, []).append(_missing_reason(lib, shim, fs, env) + f" ({error})")
    return deps
