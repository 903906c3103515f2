"""A Windows preload for Python workloads: load ZLUDA's DLLs by full path before the workload runs.

Why: NVIDIA's cudart asks for ``nvcuda.dll`` in a restricted search (System32 and modules
already loaded, measured under Wine with cudart 11.8 and 12): a copy in the application
folder, on PATH or in torch/lib is not taken *unless something loaded it first*. torch's own
``__init__`` loads every DLL in torch/lib and so does that for a placed driver; a workload
without that loop (an old torch, a ctypes or CuPy-style program) needs us to do it.

How: a ``sitecustomize`` module in a private folder put first on ``PYTHONPATH``; Python imports
it at start-up, before the workload's first line. It loads each DLL named in
``ZLUDA_RUNNER_PRELOAD`` (full paths, ``;``-separated) with ``LoadLibraryExW(path, NULL,
LOAD_WITH_ALTERED_SEARCH_PATH)`` (the DLL's own folder first for its dependencies, then the
standard search with PATH, where the HIP SDK's ``bin`` is), then hands over to any other
``sitecustomize`` the environment has. Nothing is written into the target, and the variables
are inherited by the workload's child processes (torchrun workers).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from zluda_runner.core.fsutil import atomic_write_text

PRELOAD_ENV = "ZLUDA_RUNNER_PRELOAD"
REPORT_ENV = "ZLUDA_RUNNER_PRELOAD_REPORT"  # set to 1: print each DLL loaded to stderr

SITECUSTOMIZE = r'''"""zluda-runner's Windows preload (written by zluda-run; safe to delete)."""
import os
import sys


def _zluda_runner_preload():
    names = [p for p in os.environ.get("ZLUDA_RUNNER_PRELOAD", "").split(";") if p]
    if not names or sys.platform != "win32":
        return
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32.dll", use_last_error=True)
    kernel32.LoadLibraryExW.restype = ctypes.c_void_p
    kernel32.LoadLibraryExW.argtypes = [ctypes.c_wchar_p, ctypes.c_void_p, ctypes.c_uint32]
    for path in names:
        handle = kernel32.LoadLibraryExW(path, None, 0x00000008)  # LOAD_WITH_ALTERED_SEARCH_PATH
        if not handle:
            sys.stderr.write("zluda-run: preload of %s failed (Windows error %d): the workload will "
                             "not use ZLUDA\n" % (path, ctypes.get_last_error()))
        elif os.environ.get("ZLUDA_RUNNER_PRELOAD_REPORT") == "1":
            sys.stderr.write("zluda-run: preloaded %s\n" % path)


def _chain():
    """Import the sitecustomize this one shadows, if the environment has one."""
    here = os.path.dirname(os.path.abspath(__file__))
    saved = list(sys.path)
    mine = sys.modules.pop("sitecustomize", None)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
        import importlib

        importlib.import_module("sitecustomize")
    except ImportError:
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    finally:
        sys.path[:] = saved


_zluda_runner_preload()
_chain()
'''


def preload_dir(cache_dir: Path) -> Path:
    """The private folder holding our ``sitecustomize.py`` (one per content, so versions never mix)."""
    tag = hashlib.sha256(SITECUSTOMIZE.encode()).hexdigest()[:12]
    return Path(cache_dir) / "win-preload" / tag


def write_preload(cache_dir: Path) -> Path:
    """Write (once) the preload hook; its folder."""
    folder = preload_dir(cache_dir)
    target = folder / "sitecustomize.py"
    if not target.is_file() or target.read_text(encoding="utf-8") != SITECUSTOMIZE:
        atomic_write_text(target, SITECUSTOMIZE)
    return folder


def preload_env(
    dlls: Sequence[str | Path], cache_dir: Path, base_env: Mapping[str, str], *, sep: str = ";"
) -> dict[str, str]:
    """The variables that make a Windows Python load ``dlls`` (full paths) first: ``PYTHONPATH``
    (our folder first) and :data:`PRELOAD_ENV`. ``sep`` is the target's path separator."""
    if not dlls:
        return {}
    folder = write_preload(cache_dir)
    paths = [str(d) for d in dlls]
    bad = [p for p in paths if sep in p]
    if bad:
        raise ValueError(f"a DLL path holds the separator {sep!r}: {bad[0]}")
    old = base_env.get("PYTHONPATH")
    return {
        "PYTHONPATH": sep.join([str(folder), *([old] if old else [])]),
        PRELOAD_ENV: sep.join(os.path.abspath(p) if os.name == "nt" else p for p in paths),
    }
