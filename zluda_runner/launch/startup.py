"""zluda-run's start-up code inside a Python workload: the torch defaults (``plan.defaults`` of vehicle
``startup``) applied once ``import torch`` has finished, and the hand-over to the interpreter's own
``sitecustomize``. One text, used on Linux (here) and on Windows (:mod:`zluda_runner.launch.windows.preload`
puts it after its DLL preloads, in its ``sitecustomize`` and in the file a portable Python's ``.pth``
hook runs).

How it reaches the workload on Linux: a private folder of the cache, first on ``PYTHONPATH``, holds a
``sitecustomize.py``; the interpreter imports it at start-up (``site``), it arms the torch hook, takes
its folder off ``sys.path`` and runs the ``sitecustomize`` it shadows (the distribution's, a venv's),
whose errors ``site`` reports as it would. Child processes inherit ``PYTHONPATH`` and the variable, so
torchrun workers and multiprocessing spawns get the same settings. ``python -E``/``-I`` ignore
``PYTHONPATH``: nothing of ours runs there.

The torch hook imports nothing at start-up: a finder first on ``sys.meta_path`` answers only for
``torch``; it asks the other finders for torch's own spec and wraps that loader's ``exec_module``, so
the settings are applied right after ``torch/__init__`` has run and before the workload's next line
(a program that never imports torch is untouched). It then leaves ``sys.meta_path``. It applies what
:data:`~zluda_runner.plan.defaults.TORCH_DEFAULTS_ENV` names, with torch's own switches:
``torch.backends.cuda.enable_flash_sdp(False)``, ``enable_mem_efficient_sdp(False)``,
``enable_cudnn_sdp(False)`` where torch has it, ``enable_math_sdp(True)``;
``torch.backends.cudnn.enabled = False``; ``torch.Tensor.pin_memory`` returning the tensor itself and
``DataLoader.pin_memory`` reading False (pinned memory off). A failure is one line on stderr, never the
workload's end.
``ZLUDA_RUNNER_STARTUP_REPORT=1`` prints what was applied.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from zluda_runner.core.fsutil import atomic_write_text
from zluda_runner.core.textio import WORKLOAD_SAY
from zluda_runner.plan.defaults import TORCH_DEFAULTS_ENV
from zluda_runner.plan.model import ShimPlan

REPORT_ENV = "ZLUDA_RUNNER_STARTUP_REPORT"
# Placement (Windows: the user runs python without zluda-run): the defaults recorded at place time,
# used when no launch of zluda-run set TORCH_DEFAULTS_ENV (the .pth hook of launch.windows.hook sets it).
PLACED_DEFAULTS_ENV = "ZLUDA_RUNNER_PLACED_DEFAULTS"

TORCH_DEFAULTS_CODE = r'''

def _zluda_runner_torch_defaults():
    """Arm the torch hook: zluda-run's defaults, applied when `import torch` has finished."""
    import os
    import sys

    names = [n for n in (os.environ.get("@ENV@") or os.environ.get("@PLACED@") or "").split(",") if n]
    if not names or getattr(sys, "_zluda_runner_torch_armed", False):
        return
    sys._zluda_runner_torch_armed = True

    def apply(torch):
        done = []
        try:
            if "sdpa-fused-off" in names:
                cuda = torch.backends.cuda
                cuda.enable_flash_sdp(False)
                cuda.enable_mem_efficient_sdp(False)
                if hasattr(cuda, "enable_cudnn_sdp"):
                    cuda.enable_cudnn_sdp(False)
                cuda.enable_math_sdp(True)
                done.append("flash/memory-efficient/cuDNN SDPA off, math SDPA on")
            if "cudnn-off" in names:
                torch.backends.cudnn.enabled = False
                done.append("torch.backends.cudnn.enabled = False")
            if "pinned-memory-off" in names:
                def pin_memory(self, *args, **kwargs):
                    """zluda-run: pinned memory is off (the release lacks it): the tensor, unpinned."""
                    return self

                torch.Tensor.pin_memory = pin_memory
                from torch.utils.data import DataLoader

                DataLoader.pin_memory = property(lambda self: False, lambda self, value: None)
                done.append("Tensor.pin_memory() and DataLoader(pin_memory=True) unpinned")
        except Exception as exc:  # the workload goes on; the user is told
            _zluda_runner_say("zluda-run: could not apply its torch defaults (%r): %s\n" % (exc, names))
            return
        if os.environ.get("@REPORT@") == "1":
            _zluda_runner_say("zluda-run: applied for you: %s\n" % "; ".join(done))

    if "torch" in sys.modules:  # (not at start-up; a late call)
        apply(sys.modules["torch"])
        return

    class _ZludaRunnerTorchFinder:
        busy = False

        def find_spec(self, fullname, path=None, target=None):
            if fullname != "torch" or self.busy:
                return None
            import importlib.util

            self.busy = True
            try:
                spec = importlib.util.find_spec("torch")  # the other finders' answer
            finally:
                self.busy = False
            loader = getattr(spec, "loader", None)
            run = getattr(loader, "exec_module", None)
            if run is None or isinstance(loader, type):  # (a class-level loader is never patched)
                return spec
            finder = self

            def exec_module(module):
                try:
                    run(module)
                finally:
                    if finder in sys.meta_path:
                        sys.meta_path.remove(finder)
                apply(module)

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _ZludaRunnerTorchFinder())


_zluda_runner_torch_defaults()
'''
for _mark, _name in (("@ENV@", TORCH_DEFAULTS_ENV), ("@PLACED@", PLACED_DEFAULTS_ENV),
                     ("@REPORT@", REPORT_ENV)):
    TORCH_DEFAULTS_CODE = TORCH_DEFAULTS_CODE.replace(_mark, _name)
# Self-contained (the placed-defaults hook embeds it): with the one writer of zluda-run's lines
# inside the workload (core/textio: UTF-8 under a pipe, as zluda-run's own output).
TORCH_DEFAULTS = WORKLOAD_SAY + TORCH_DEFAULTS_CODE

CHAIN = r'''

def _zluda_runner_chain():
    """Off sys.path with our folder; then run the sitecustomize this one shadows, as site would."""
    import os
    import sys

    here = os.path.normcase(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:] = [p for p in sys.path if os.path.normcase(os.path.abspath(p or ".")) != here]
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)  # its errors are site's to report, as without zluda-run


_zluda_runner_chain()
'''

LINUX_SITECUSTOMIZE = ('"""zluda-runner\'s start-up code (written by zluda-run; safe to delete)."""\n'
                       + TORCH_DEFAULTS + CHAIN)


def startup_dir(cache_dir: Path) -> Path:
    """The private folder of the Linux start-up code (one per content, so versions never mix)."""
    tag = hashlib.sha256(LINUX_SITECUSTOMIZE.encode()).hexdigest()[:12]
    return Path(cache_dir) / "py-startup" / tag


def write_startup(cache_dir: Path) -> Path:
    """Write (once) the Linux ``sitecustomize.py``; its folder."""
    folder = startup_dir(cache_dir)
    target = folder / "sitecustomize.py"
    if not target.is_file() or target.read_text(encoding="utf-8") != LINUX_SITECUSTOMIZE:
        atomic_write_text(target, LINUX_SITECUSTOMIZE)
    return folder


def needs_startup(plan: ShimPlan) -> bool:
    """Whether the plan has start-up defaults to apply inside a Python workload."""
    return bool(plan.env.get(TORCH_DEFAULTS_ENV)) and bool(plan.target.python or plan.target.torch_path)


def linux_startup_env(plan: ShimPlan, cache_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``PYTHONPATH`` with our start-up folder first (the user's entries kept after), when the plan has
    start-up defaults; else nothing."""
    if plan.os != "linux" or not needs_startup(plan):
        return {}
    folder = str(write_startup(Path(os.path.abspath(cache_dir))))
    old = env.get("PYTHONPATH")
    return {"PYTHONPATH": folder + (f":{old}" if old else "")}
