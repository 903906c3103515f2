"""zluda-run's start-up code for Windows Python workloads: load ZLUDA's DLLs by full path before the
workload's first line, and (``--verify-load``) list the process's modules at exit.

Why: NVIDIA's cudart asks for ``nvcuda.dll`` in a restricted search (System32 and modules
already loaded, measured under Wine with cudart 11.8 and 12), and a workload's own
``ctypes.WinDLL("nvcuda.dll")`` searches the application folder, System32 and
``os.add_dll_directory`` folders, never PATH (Python 3.8+): a copy in the application folder, on
PATH or in torch/lib is not taken *unless something loaded it first*. Both then get the module
already loaded under that base name (measured under Wine: ``ctypes.WinDLL("nvcuda.dll")`` after
our full-path load returns that module).

How it reaches the interpreter (``plan.startup_hook``, chosen by :mod:`zluda_runner.plan.windows`):

* ``sitecustomize``: a regular interpreter imports ``sitecustomize`` at start-up; ours sits in a
  private folder of the cache put first on ``PYTHONPATH``, runs the start-up code, takes its
  folder off ``sys.path`` and hands over to the ``sitecustomize`` it shadows (whose own
  ``sys.path`` changes and errors are kept: site reports them as it would);
* ``pth``: a portable interpreter (``._pth``) ignores ``PYTHONPATH``, but with ``import site`` it
  runs the ``import`` lines of ``.pth`` files in its site-packages: one inert line there
  (:mod:`zluda_runner.launch.windows.hook`) runs the start-up code named by ``ZLUDA_RUNNER_STARTUP``.

The start-up code loads each DLL named in ``ZLUDA_RUNNER_PRELOAD`` (full paths, ``;``-separated)
with ``LoadLibraryExW(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH)`` (the DLL's own folder first for
its dependencies, then the standard search with PATH, where the HIP SDK's ``bin`` is). With
``ZLUDA_RUNNER_MODULES_DIR`` set, an ``atexit`` handler (registered first, so it runs after the
workload's own) writes ``modules-<pid>.json`` there: every module of the process with the file it
was loaded from (``EnumProcessModules``/``GetModuleFileNameW``), and any preload that failed.
Then the torch defaults of the plan (:mod:`zluda_runner.launch.startup`, the same text as on Linux:
applied once ``import torch`` has finished). Nothing is written into the target by this module, and
the variables are inherited by the workload's child processes (torchrun workers, multiprocessing
spawns).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from zluda_runner.core.fsutil import write_if_changed
from zluda_runner.core.textio import WORKLOAD_SAY
from zluda_runner.launch.startup import CHAIN, TORCH_DEFAULTS_CODE

PRELOAD_ENV = "ZLUDA_RUNNER_PRELOAD"
REPORT_ENV = "ZLUDA_RUNNER_PRELOAD_REPORT"  # set to 1: print each DLL loaded to stderr
MODULES_ENV = "ZLUDA_RUNNER_MODULES_DIR"  # a folder: each process writes its module list there at exit
STARTUP_ENV = "ZLUDA_RUNNER_STARTUP"  # the start-up code's file, for the .pth hook
STARTUP_FILE = "zluda_runner_startup.py"

STARTUP_SAY_MARK = "# @SAY@\n"
STARTUP = r'''"""zluda-runner's Windows start-up code (written by zluda-run; safe to delete)."""
import os
import sys
# @SAY@


def _zluda_runner_modules(kernel32):
    import ctypes
    from ctypes import wintypes

    kernel32.GetCurrentProcess.restype = wintypes.HANDLE
    enum = kernel32.K32EnumProcessModules
    enum.argtypes = [wintypes.HANDLE, ctypes.c_void_p, wintypes.DWORD, ctypes.POINTER(wintypes.DWORD)]
    kernel32.GetModuleFileNameW.argtypes = [wintypes.HMODULE, wintypes.LPWSTR, wintypes.DWORD]
    proc = kernel32.GetCurrentProcess()
    count = 1024
    while True:
        handles = (wintypes.HMODULE * count)()
        needed = wintypes.DWORD()
        if not enum(proc, handles, ctypes.sizeof(handles), ctypes.byref(needed)):
            return None
        n = needed.value // ctypes.sizeof(wintypes.HMODULE)
        if n <= count:
            break
        count = n
    buf = ctypes.create_unicode_buffer(32768)
    paths = []
    for handle in handles[:n]:
        if handle and kernel32.GetModuleFileNameW(handle, buf, 32768):
            paths.append(buf.value)
    return paths


def _zluda_runner_listing(folder, kernel32, failed):
    import json

    try:
        modules = _zluda_runner_modules(kernel32)
    except Exception as exc:  # a listing that cannot be taken is said so, never a crash at exit
        modules, failed = None, failed + [["(module listing)", repr(exc)]]
    data = {"pid": os.getpid(), "argv": list(sys.argv), "executable": sys.executable,
            "modules": modules, "preload_failed": failed}
    path = os.path.join(folder, "modules-%d.json" % os.getpid())
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(path + ".tmp", path)
    except OSError as exc:
        _zluda_runner_say("zluda-run: cannot write the module listing %s: %s\n" % (path, exc))


def _zluda_runner_startup():
    if sys.platform != "win32" or getattr(sys, "_zluda_runner_started", False):
        return
    sys._zluda_runner_started = True
    names = [p for p in os.environ.get("ZLUDA_RUNNER_PRELOAD", "").split(";") if p]
    listing = os.environ.get("ZLUDA_RUNNER_MODULES_DIR")
    if not names and not listing:
        return
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32.dll", use_last_error=True)
    kernel32.LoadLibraryExW.restype = ctypes.c_void_p
    kernel32.LoadLibraryExW.argtypes = [ctypes.c_wchar_p, ctypes.c_void_p, ctypes.c_uint32]
    failed = []
    for path in names:
        handle = kernel32.LoadLibraryExW(path, None, 0x00000008)  # LOAD_WITH_ALTERED_SEARCH_PATH
        if not handle:
            code = ctypes.get_last_error()
            failed.append([path, code])
            _zluda_runner_say("zluda-run: preload of %s failed (Windows error %d%s): the workload will "
                             "not use ZLUDA's %s\n" % (path, code, ": it or one of its dependencies was not "
                             "found" if code == 126 else "", os.path.basename(path)))
        elif os.environ.get("ZLUDA_RUNNER_PRELOAD_REPORT") == "1":
            _zluda_runner_say("zluda-run: preloaded %s\n" % path)
    if listing:
        import atexit

        atexit.register(_zluda_runner_listing, listing, kernel32, failed)


_zluda_runner_startup()
'''

# The start-up code the .pth hook runs: the writer of zluda-run's lines (core/textio), the preloads, then
# the torch defaults (launch.startup, shared with Linux); the sitecustomize adds the hand-over to the
# sitecustomize it shadows.
STARTUP_CODE = STARTUP.replace(STARTUP_SAY_MARK, WORKLOAD_SAY, 1) + TORCH_DEFAULTS_CODE
SITECUSTOMIZE = STARTUP_CODE + CHAIN


def preload_dir(cache_dir: Path) -> Path:
    """The private folder holding our start-up code (one per content, so versions never mix)."""
    tag = hashlib.sha256(SITECUSTOMIZE.encode()).hexdigest()[:12]
    return Path(cache_dir) / "win-preload" / tag


def write_preload(cache_dir: Path) -> Path:
    """Write (once) ``sitecustomize.py`` and the start-up code the ``.pth`` hook runs; their folder."""
    folder = preload_dir(cache_dir)
    for name, text in (("sitecustomize.py", SITECUSTOMIZE), (STARTUP_FILE, STARTUP_CODE)):
        write_if_changed(folder / name, text)
    return folder


def _paths(dlls: Sequence[str | Path], sep: str) -> list[str]:
    paths = [str(d) for d in dlls]
    bad = [p for p in paths if sep in p]
    if bad:
        raise ValueError(f"a DLL path holds the separator {sep!r}: {bad[0]}")
    return [os.path.abspath(p) if os.name == "nt" else p for p in paths]


def preload_env(
    dlls: Sequence[str | Path], cache_dir: Path, base_env: Mapping[str, str], *, sep: str = ";",
    always: bool = False,
) -> dict[str, str]:
    """The variables that make a regular Windows Python run our start-up code, loading ``dlls`` (full
    paths) first: ``PYTHONPATH`` (our folder first) and :data:`PRELOAD_ENV`. ``sep`` is the target's
    path separator; ``always``: set up the hook with no DLL to load (a module listing is wanted)."""
    if not dlls and not always:
        return {}
    folder = write_preload(cache_dir)
    old = base_env.get("PYTHONPATH")
    env = {"PYTHONPATH": sep.join([str(folder), *([old] if old else [])])}
    if dlls:
        env[PRELOAD_ENV] = sep.join(_paths(dlls, sep))
    return env


def pth_hook_env(dlls: Sequence[str | Path], cache_dir: Path, *, sep: str = ";") -> dict[str, str]:
    """The variables that make a portable interpreter's ``.pth`` hook run our start-up code (the hook
    file itself is written by :func:`zluda_runner.launch.windows.hook.install_pth_hook`)."""
    folder = write_preload(cache_dir)
    env = {STARTUP_ENV: str(folder / STARTUP_FILE)}
    if dlls:
        env[PRELOAD_ENV] = sep.join(_paths(dlls, sep))
    return env
